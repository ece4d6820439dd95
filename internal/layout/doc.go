// Package layout holds the test that keeps the code's imports to the rules of docs/design.md §2:
// every package is listed there, and imports only the packages its row allows.
package layout
