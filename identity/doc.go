// Package identity holds the rules of publisher identity that the store, the service and the
// command line share: what a publisher name is, which API groups a name owns by itself, and the
// challenge a publisher signs to prove it holds a key's private half.
package identity
