//go:build tools

// The public kpt functions Porch itself depends on, built from their modules as main packages.
package tools

import (
	_ "github.com/kptdev/krm-functions-catalog/functions/go/apply-replacements"
	_ "github.com/kptdev/krm-functions-catalog/functions/go/set-namespace"
	_ "github.com/kptdev/krm-functions-catalog/functions/go/starlark"
)
