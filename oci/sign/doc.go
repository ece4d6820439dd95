// Package sign holds the cosign signature formats krm-catalog reads and writes, without registry
// access: cosign key files, the simple-signing payload of cosign's legacy `sha256-<hex>.sig`
// signatures, and sigstore bundles as cosign v3 stores them next to an artifact. Package oci
// moves them through registries.
//
// Only key-based, offline verification is supported: "verified" means a signature checks out
// under a public key the caller trusts, over the digest the caller asked about. Transparency logs
// and certificates are not consulted.
package sign
