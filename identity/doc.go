// Package identity holds the rules of publisher identity that the store, the service and the
// command line share: what a publisher name is, which API groups a name owns by itself, the
// challenge a publisher signs to prove it holds a key's private half or a keyless identity, the
// identity patterns (OIDC issuer and certificate subject) it registers, their verification on
// sigstore-go against a trusted root, and what a verified SLSA provenance attestation says.
package identity
