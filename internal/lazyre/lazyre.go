// Package lazyre holds regular expressions that compile on first use.
//
// A regexp.MustCompile at package level runs when the program starts, in every command of the one
// krm-catalog binary, whether the command matches anything or not; these compile once, when first
// matched.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call and returns the same compiled
// expression on every call. A malformed expr panics on the first call, as regexp.MustCompile does.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
