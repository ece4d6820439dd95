package upgrade

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	lines := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString("line " + string(rune('a'+i%26)) + "\n")
		}
		return b.String()
	}
	base := lines(20)
	tests := []struct {
		name, a, b, want string
	}{
		{"one line", "a\nb\nc\n", "a\nB\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"two changes far apart: two hunks", base, strings.Replace(strings.Replace(base, "line c\n", "line C\n", 1), "line s\n", "line S\n", 1),
			"--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n line b\n-line c\n+line C\n line d\n line e\n line f\n@@ -15,6 +15,6 @@\n line p\n line q\n line r\n-line s\n+line S\n line t\n line u\n"},
		{"no newline at the end", "a\nb", "a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"added to an empty file", "", "a\n", "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+a\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(tc.want, unifiedDiff("f", []byte(tc.a), []byte(tc.b))); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

// The diffs apply with patch(1) to give the new file, for random edits of a file.
func TestUnifiedDiffApplies(t *testing.T) {
	t.Parallel()
	patch, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("patch(1) is not installed (Debian: apt-get install patch)")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c", "  - image: x", "# c", ""}
	for i := range 200 {
		var a []string
		for range rng.IntN(30) {
			a = append(a, words[rng.IntN(len(words))]+"\n")
		}
		b := append([]string(nil), a...)
		for range rng.IntN(5) + 1 {
			switch k := rng.IntN(3); {
			case k == 0 || len(b) == 0:
				at := rng.IntN(len(b) + 1)
				b = append(b[:at], append([]string{words[rng.IntN(len(words))] + "!\n"}, b[at:]...)...)
			case k == 1:
				at := rng.IntN(len(b))
				b = append(b[:at], b[at+1:]...)
			default:
				b[rng.IntN(len(b))] = "changed\n"
			}
		}
		oldText, newText := strings.Join(a, ""), strings.Join(b, "")
		if oldText == newText {
			continue
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(oldText), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(patch, "-s", "-p1", "--no-backup-if-mismatch")
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(unifiedDiff("f", []byte(oldText), []byte(newText)))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("case %d: patch: %v\n%s\n%s", i, err, out, unifiedDiff("f", []byte(oldText), []byte(newText)))
		}
		got, err := os.ReadFile(filepath.Join(dir, "f"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != newText {
			t.Fatalf("case %d: patched\n%q\nwant\n%q", i, got, newText)
		}
	}
}
