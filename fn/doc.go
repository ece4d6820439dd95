// Package fn runs KRM functions: it reads and writes ResourceLists (YAML and JSON, keeping comments,
// field order and scalar styles), reads and writes package directories with the path and index
// annotations of the KRM Functions Specification, collects results, and runs pipelines of functions.
// The runtimes themselves (container, exec, starlark, server mode) live in sub-packages; Composition
// consolidation lives in fn/kustomize/composition.
package fn

import "errors"

// Sentinel errors of the domain. Callers test them with errors.Is.
var (
	// ErrDigestMismatch: fetched content does not have the sha256 the catalog pins.
	ErrDigestMismatch = errors.New("sha256 digest mismatch")
	// ErrFunctionFailed: a function exited non-zero, or reported an error result.
	ErrFunctionFailed = errors.New("function failed")
	// ErrInvalidResourceList: input or output is not a well-formed ResourceList.
	ErrInvalidResourceList = errors.New("invalid ResourceList")
	// ErrInvalidPackage: a package directory cannot be written back as it stands (a path outside the
	// package, two resources at one path and index).
	ErrInvalidPackage = errors.New("invalid package")
	// ErrNotAllowed: running the function needs a permission the user did not give (--allow-exec,
	// --allow-network, --mount).
	ErrNotAllowed = errors.New("not allowed")
)
