package evaluator

import (
	"fmt"
	"strings"

	"github.com/krm-catalog/krm-catalog/fn"
)

// Bounds of a failed call's status message: it travels in an HTTP/2 header (grpc-message), which
// proxies and clients limit, and Porch shows it whole. The details carry everything.
const (
	maxMessageResults = 12 << 10 // the error results, one line each
	maxMessageLine    = 2 << 10  // one error result
	maxMessageStderr  = 4 << 10  // the end of the function's standard error
)

// failureMessage says why a call failed, as Porch's own runners say it ("failed to evaluate
// function IMAGE with structured results: ... and stderr: ..."): every error result, one line each
// with its severity, resource, file, field and message, then the end of the function's standard
// error; a failure without error results (a crash, a timeout, output that is not a ResourceList)
// says what ended it instead. The message is bounded (the constants above); what is cut says so.
func failureMessage(image string, run fn.FunctionResults, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "failed to evaluate function %q", image)
	if run.ExitCode != 0 {
		fmt.Fprintf(&b, " (exit code %d)", run.ExitCode)
	}
	var errs []fn.Result
	for _, r := range run.Results {
		if r.IsError() {
			errs = append(errs, r)
		}
	}
	if len(errs) == 0 {
		fmt.Fprintf(&b, ": %v", err)
	} else {
		fmt.Fprintf(&b, " with structured results (%d error %s):", len(errs), plural(len(errs), "result", "results"))
		used := 0
		for i, r := range errs {
			line := cut(r.String(), maxMessageLine)
			if used+len(line) > maxMessageResults {
				fmt.Fprintf(&b, "\n... and %d more error %s (the status details hold them all)", len(errs)-i, plural(len(errs)-i, "result", "results"))
				break
			}
			used += len(line)
			b.WriteString("\n")
			b.WriteString(line)
		}
	}
	if stderr := strings.TrimRight(run.Stderr, "\n"); stderr != "" {
		b.WriteString("\nand stderr:\n")
		b.WriteString(tail(stderr, maxMessageStderr))
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// cut keeps the first n bytes of s, saying that it cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "... (cut)"
}

// tail keeps the last n bytes of s, from a line's start when one is within them.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	t := s[len(s)-n:]
	if i := strings.IndexByte(t, '\n'); i >= 0 && i < len(t)-1 {
		t = t[i+1:]
	}
	return "(the last " + fmt.Sprint(len(t)) + " bytes)\n" + t
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
