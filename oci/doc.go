// Package oci moves krm-catalog artifacts through OCI registries with oras-go v2: catalogs,
// function definitions, starlark scripts and exec binaries (docs/design.md §4). Everything fetched is
// checked against its digest while it streams, before it is used or cached; pulled content goes
// through a local OCI image-layout cache keyed by digest. Signatures are cosign's, key-based and
// offline, in both the legacy tag format and the sigstore bundle stored as an OCI 1.1 referrer;
// the formats themselves live in oci/sign.
//
// A Client is the entry point. The service pushes a published catalog with
// Client.PushCatalog and reports signature status with Client.SignatureStatus.
package oci
