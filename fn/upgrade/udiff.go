package upgrade

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the table the line diff fills: past it, the lines between the common head
// and tail are shown as removed and added whole. A rewrite changes a few lines of a small file.
const maxDiffCells = 4 << 20

// unifiedDiff is the unified diff (three lines of context) of a file's old and new content, as
// git prints it: a relative path under a/ and b/, for `git apply`; an absolute one as it is, as
// `diff -u` prints it.
func unifiedDiff(name string, a, b []byte) string {
	x, y := splitLines(string(a)), splitLines(string(b))
	ops := diffLines(x, y)
	var out strings.Builder
	if strings.HasPrefix(name, "/") {
		fmt.Fprintf(&out, "--- %s\n+++ %s\n", name, name)
	} else {
		fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", name, name)
	}
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// a hunk: from context lines before this change to context lines after the last change
		// that is no further than 2*context lines from the one before it
		start := i
		for start > 0 && i-start < context && ops[start-1].kind == ' ' {
			start--
		}
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(end+context, len(ops))
				break
			}
			end = run
		}
		aStart, bStart, aLen, bLen := ops[start].a, ops[start].b, 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.text)
			if !strings.HasSuffix(op.text, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s after each line break, keeping them.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// lineOp is one line of a diff: kept (' '), removed ('-') or added ('+'); a and b are the
// 0-based positions in the old and new lines where it stands.
type lineOp struct {
	kind byte
	text string
	a, b int
}

// diffLines is a shortest edit script of x into y: the common head and tail, and between them
// the longest common subsequence.
func diffLines(x, y []string) []lineOp {
	head := 0
	for head < len(x) && head < len(y) && x[head] == y[head] {
		head++
	}
	tail := 0
	for tail < len(x)-head && tail < len(y)-head && x[len(x)-1-tail] == y[len(y)-1-tail] {
		tail++
	}
	var ops []lineOp
	for i := 0; i < head; i++ {
		ops = append(ops, lineOp{' ', x[i], i, i})
	}
	mx, my := x[head:len(x)-tail], y[head:len(y)-tail]
	if len(mx)*len(my) > maxDiffCells {
		for i, l := range mx {
			ops = append(ops, lineOp{'-', l, head + i, head})
		}
		for j, l := range my {
			ops = append(ops, lineOp{'+', l, head + len(mx), head + j})
		}
	} else {
		// lcs[i][j]: the longest common subsequence of mx[i:] and my[j:]
		lcs := make([][]int32, len(mx)+1)
		for i := range lcs {
			lcs[i] = make([]int32, len(my)+1)
		}
		for i := len(mx) - 1; i >= 0; i-- {
			for j := len(my) - 1; j >= 0; j-- {
				if mx[i] == my[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(mx) || j < len(my) {
			switch {
			case i < len(mx) && j < len(my) && mx[i] == my[j]:
				ops = append(ops, lineOp{' ', mx[i], head + i, head + j})
				i++
				j++
			case i < len(mx) && (j == len(my) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, lineOp{'-', mx[i], head + i, head + j})
				i++
			default:
				ops = append(ops, lineOp{'+', my[j], head + i, head + j})
				j++
			}
		}
	}
	for k := 0; k < tail; k++ {
		ops = append(ops, lineOp{' ', x[len(x)-tail+k], len(x) - tail + k, len(y) - tail + k})
	}
	return ops
}
