// Package sign holds the cosign signature formats krm-catalog reads and writes, without registry
// access: cosign key files, the simple-signing payload of cosign's legacy `sha256-<hex>.sig`
// signatures, and sigstore bundles as cosign v3 stores them next to an artifact. Package oci
// moves them through registries.
//
// "Verified" means a signature checks out, over the digest the caller asked about, under what the
// caller trusts (a Trust): a public key, or a keyless identity (a Fulcio certificate's subject and
// OIDC issuer) whose certificate chains to a trusted root and whose signature a transparency log
// or timestamp authority of that root vouches for. Keyless bundles are verified by sigstore-go,
// offline, against the embedded public-good root or one the caller passes.
package sign
