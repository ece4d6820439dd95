package kpt

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The render status changes the Kptfile's status lines and nothing else: read is the file as its
// author wrote it, written what the package writer makes of it with the status (re-encoded: the
// flow mapping's image quoted, indentation and comment spacing changed).
func TestWithStatusOf(t *testing.T) {
	t.Parallel()
	const status = "status:\n  conditions:\n    - type: Rendered\n      status: \"True\"\n      reason: RenderSuccess\n"
	tests := []struct {
		name, read, written, want string
	}{
		{
			name:    "no status before: the status lines are added",
			read:    "# the package\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n    name: p   # four spaces\npipeline:\n  mutators:\n    - {image: host:5000/fn:v1, configPath: c.yaml}\n",
			written: "# the package\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p # four spaces\npipeline:\n  mutators:\n    - {image: 'host:5000/fn:v1', configPath: c.yaml}\n" + status,
			want:    "# the package\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n    name: p   # four spaces\npipeline:\n  mutators:\n    - {image: host:5000/fn:v1, configPath: c.yaml}\n" + status,
		},
		{
			name:    "a status before, not last: replaced where it is",
			read:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p}\nstatus:\n  conditions:\n  - type: Rendered\n    status: \"False\"\n\n# after the status\ninfo: {a: b:c}\n",
			written: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p}\nstatus:\n  conditions:\n  - type: Rendered\n    status: \"True\"\n    reason: RenderSuccess\n\n# after the status\ninfo: {a: 'b:c'}\n",
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p}\nstatus:\n  conditions:\n  - type: Rendered\n    status: \"True\"\n    reason: RenderSuccess\n\n# after the status\ninfo: {a: b:c}\n",
		},
		{
			name:    "a comment ending the file stays before the status, as the writer puts it",
			read:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n    - image: 'fn:v1'\n# the end\n",
			written: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n    - image: 'fn:v1'\n# the end\n" + status,
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n    - image: 'fn:v1'\n# the end\n" + status,
		},
		{
			name:    "a function changed the pipeline: the writer's file",
			read:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n    name: p\npipeline:\n  mutators:\n    - image: fn:v1\n",
			written: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n    - image: fn:v2\n" + status,
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n    - image: fn:v2\n" + status,
		},
		{
			name:    "a comment the function added: the writer's file",
			read:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n    name: p\n",
			written: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p # named\n" + status,
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p # named\n" + status,
		},
		{
			name:    "a file in flow style: the writer's file",
			read:    "{apiVersion: kpt.dev/v1, kind: Kptfile, metadata: {name: p}}\n",
			written: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p}\n" + status,
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p}\n" + status,
		},
		{
			name:    "a status holding a comment at column 1, which the splice cannot place: the writer's file",
			read:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n    name: p\nstatus:\n  conditions:\n# old\n  - type: Rendered\n    status: \"False\"\n",
			written: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\nstatus:\n  conditions:\n  # old\n  - type: Rendered\n    status: \"True\"\n",
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\nstatus:\n  conditions:\n  # old\n  - type: Rendered\n    status: \"True\"\n",
		},
		{
			name:    "no final newline",
			read:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n    name: p",
			written: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n" + status,
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n    name: p\n" + status,
		},
		{
			name:    "two documents: the writer's file",
			read:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n    name: p\n---\na: b\n",
			written: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n" + status,
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n" + status,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := string(withStatusOf([]byte(tc.read), []byte(tc.written)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Whatever the files, withStatusOf gives written or a document that reads as written does.
func FuzzWithStatusOf(f *testing.F) {
	f.Add("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n    name: p\n", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\nstatus:\n  a: b\n")
	f.Add("a: {b: c:d}\nstatus:\n  x: 1\n# c\nz: 2\n", "a: {b: 'c:d'}\nstatus:\n  x: 2\n# c\nz: 2\n")
	f.Add("a: 1\nstatus: {}\n", "a: 1\nstatus:\n  y:\n  - 1\n")
	f.Fuzz(func(t *testing.T, read, written string) {
		got := withStatusOf([]byte(read), []byte(written))
		if string(got) == written {
			return
		}
		g, ok := rootMapping(got)
		w, wok := rootMapping([]byte(written))
		if !ok || !wok || canonical(g) != canonical(w) {
			t.Fatalf("withStatusOf(%q, %q) = %q, which does not read as written", read, written, got)
		}
	})
}
