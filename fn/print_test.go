package fn

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// rawAnswer is a process function whose answer is worked out from what it was sent.
type rawAnswer struct {
	answer func(sent []byte) []byte
	exit   int // its exit code
}

func (f rawAnswer) call(in *ResourceList, stdout io.Writer) (*RawCall, error) {
	sent, err := in.Encode(YAML)
	if err != nil {
		return nil, err
	}
	call := &RawCall{Sent: sent, Format: YAML, In: in, Stderr: "from stderr\n"}
	if f.exit != 0 {
		call.ExitErr = &FunctionError{ExitCode: f.exit, Stderr: call.Stderr, Err: fmt.Errorf("exit status %d", f.exit)}
	}
	_, err = stdout.Write(f.answer(sent))
	return call, err
}

func (f rawAnswer) Run(_ context.Context, in *ResourceList) (*ResourceList, error) {
	var out bytes.Buffer
	call, err := f.call(in, &out)
	if err != nil {
		return nil, err
	}
	return call.Decode(out.Bytes())
}

func (f rawAnswer) RunRaw(_ context.Context, in *ResourceList, stdout io.Writer) (*RawCall, error) {
	return f.call(in, stdout)
}

// printRun is what printing a run gives: the output, the runs, the error's message, and whether
// the output was streamed.
type printRun struct {
	Out      string
	Runs     []FunctionResults
	Err      string
	streamed bool
}

// printWhole is how fn run printed a run before RunToPrint: Run, then the list encoded whole.
func printWhole(t testing.TB, steps []Step, input []byte) printRun {
	t.Helper()
	list, in, err := DecodeInput(input)
	if err != nil {
		t.Fatal(err)
	}
	items, runs, err := Run(context.Background(), steps, list.Items)
	if err != nil {
		return printRun{Runs: runs, Err: err.Error()}
	}
	rl := &ResourceList{APIVersion: list.APIVersion, Items: items, FunctionConfig: list.FunctionConfig}
	for _, r := range runs {
		rl.Results = append(rl.Results, r.Results...)
	}
	b, err := rl.EncodeOutput(in)
	if err != nil {
		return printRun{Runs: runs, Err: err.Error()}
	}
	return printRun{Out: string(b), Runs: runs}
}

// printStreamed is RunToPrint streaming every output it can.
func printStreamed(t testing.TB, steps []Step, input []byte) printRun {
	t.Helper()
	list, in, err := DecodeInput(input)
	if err != nil {
		t.Fatal(err)
	}
	p, runs, err := runToPrint(context.Background(), steps, list.Items, Print{APIVersion: list.APIVersion, FunctionConfig: list.FunctionConfig, In: in}, 0)
	if err != nil {
		return printRun{Runs: runs, Err: err.Error()}
	}
	streamed := p.Streamed()
	var b bytes.Buffer
	if _, err := p.WriteTo(&b); err != nil {
		return printRun{Runs: runs, Err: err.Error(), streamed: streamed}
	}
	return printRun{Out: b.String(), Runs: runs, streamed: streamed}
}

const printInput = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    # the app
    name: app # named
    namespace: shop
    labels: {app: web}
  spec:
    replicas: 2
    template:
      spec:
        containers:
        - name: web
          image: "nginx"
          args: ['-v', yes]
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: settings
    namespace: shop
    annotations:
      config.kubernetes.io/path: settings.yaml
      internal.config.kubernetes.io/path: settings.yaml
  data:
    mode: "on"
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata:
    name: fn-config
  data:
    namespace: prod
`

// printInputStream is printInput's items as a stream of documents.
const printInputStream = `apiVersion: apps/v1
kind: Deployment
metadata:
  # the app
  name: app # named
  namespace: shop
spec:
  replicas: 2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: "on"
`

// answers are function answers to the input they are given, as functions write them and
// otherwise: the ones a plain function writes are streamed (stream), the others are read whole.
func printAnswers() []struct {
	name   string
	answer func(sent []byte) []byte
	exit   int
	stream bool
	// onlyList: stream is what a list input gives; a stream of resources, which carries no path
	// annotations, is streamed
	onlyList bool
} {
	constant := func(s string) func([]byte) []byte { return func([]byte) []byte { return []byte(s) } }
	edit := func(old, new string) func([]byte) []byte {
		return func(sent []byte) []byte { return bytes.ReplaceAll(sent, []byte(old), []byte(new)) }
	}
	withResults := func(f func([]byte) []byte, results string) func([]byte) []byte {
		return func(sent []byte) []byte { return append(f(sent), results...) }
	}
	const head = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
	generated := head + "items:\n" + strings.Repeat("- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: generated\n    labels:\n      app: gen\n  data:\n    key-00: xxxxxxxx-0\n    key-01: 'yes'\n", 5)
	return []struct {
		name     string
		answer   func(sent []byte) []byte
		exit     int
		stream   bool
		onlyList bool
	}{
		{name: "the input echoed", answer: func(sent []byte) []byte { return sent }, stream: true},
		{name: "a field changed", answer: edit("namespace: shop", "namespace: prod"), stream: true},
		{name: "comments and styles dropped", answer: func(sent []byte) []byte {
			s := strings.NewReplacer("    # the app\n", "", " # named", "", `"nginx"`, "nginx", `"on"`, "'on'", "{app: web}", "\n      app: web").Replace(string(sent))
			return []byte(s)
		}, stream: true},
		{name: "items generated, no input kept", answer: constant(generated), stream: true},
		{name: "info and warning results", answer: withResults(edit("replicas: 2", "replicas: 3"), "results:\n- message: scaled\n  severity: info\n- message: big\n  severity: warning\n"), stream: true},
		{name: "an error result, exit 0", answer: withResults(func(s []byte) []byte { return s }, "results:\n- message: wrong\n  severity: error\n"), stream: true},
		{name: "a path moved", answer: edit("config.kubernetes.io/path: settings.yaml", "config.kubernetes.io/path: moved.yaml"), stream: true},
		{name: "a comment above an item", answer: edit("- apiVersion: v1\n  kind: ConfigMap", "# settings\n- apiVersion: v1\n  kind: ConfigMap")},
		{name: "an item without kind", answer: edit("kind: ConfigMap", "kindly: ConfigMap")},
		{name: "an item not a mapping", answer: constant(head + "items:\n- just a string\n")},
		{name: "items not a list", answer: constant(head + "items:\n  a: 1\n")},
		{name: "not a ResourceList", answer: constant("apiVersion: v1\nkind: ConfigMap\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n")},
		{name: "a bad apiVersion", answer: constant("apiVersion: v9\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n")},
		{name: "exit 1 with results", answer: withResults(func(s []byte) []byte { return s }, "results:\n- message: failed\n  severity: error\n"), exit: 1},
		{name: "exit 2, no output", answer: constant(""), exit: 2},
		{name: "nothing written", answer: constant("")},
		{name: "not YAML", answer: constant(head + "items:\n- [unclosed\n")},
		{name: "an anchor and an alias", answer: constant(head + "items:\n- &a\n  apiVersion: v1\n  kind: ConfigMap\n- apiVersion: v1\n  kind: Secret\n  data: *a\n")},
		{name: "two items keys", answer: constant(head + "items:\n- apiVersion: v1\n  kind: ConfigMap\nitems:\n- apiVersion: v1\n  kind: Secret\n")},
		{name: "path annotations that disagree", answer: func(sent []byte) []byte {
			return edit("internal.config.kubernetes.io/path: settings.yaml", "internal.config.kubernetes.io/path: other.yaml")(edit("\n      config.kubernetes.io/path: settings.yaml", "\n      config.kubernetes.io/path: moved.yaml")(sent))
		}, onlyList: true},
		{name: "nested past the depth budget", answer: constant(head + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  data: " + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + "\n")},
		// past the budget by more than the scan's slack: refused unread (between the budget and
		// that, the whole read builds the budget's nodes before it refuses: a gigabyte)
		{name: "over the node budget", answer: constant(head + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  data:\n    list: [" + strings.Repeat("1,", 10_500_000) + "1]\n")},
		{name: "a tagged item, read by yaml.v3", answer: constant(head + "items:\n- !!map\n  apiVersion: v1\n  kind: ConfigMap\n")},
	}
}

// TestRunToPrint: a streamed output is, byte for byte, the output encoded whole, with the same
// runs and the same error, for every answer, in both shapes of input; the answers plain functions
// write are streamed.
func TestRunToPrint(t *testing.T) {
	t.Parallel()
	for _, input := range []string{printInput, printInputStream} {
		for _, a := range printAnswers() {
			t.Run(a.name, func(t *testing.T) {
				t.Parallel()
				if a.name == "over the node budget" && testing.Short() {
					t.Skip("builds 21 MB of YAML")
				}
				steps := []Step{{Name: "answer", Function: rawAnswer{answer: a.answer, exit: a.exit}}}
				whole := printWhole(t, steps, []byte(input))
				streamed := printStreamed(t, steps, []byte(input))
				if diff := cmp.Diff(whole, streamed, cmpopts.IgnoreUnexported(printRun{})); diff != "" {
					t.Errorf("streamed differs from whole (-whole +streamed):\n%s", diff)
				}
				if want := a.stream || a.onlyList && input != printInput; streamed.streamed != want {
					t.Errorf("streamed = %v, want %v (%+v)", streamed.streamed, want, streamed)
				}
			})
		}
	}
}

// Two steps: the first runs as Run runs it, the last is streamed.
func TestRunToPrintSteps(t *testing.T) {
	t.Parallel()
	steps := []Step{
		{Name: "first", Function: rawAnswer{answer: func(s []byte) []byte {
			return append(bytes.ReplaceAll(s, []byte("replicas: 2"), []byte("replicas: 5")), "results:\n- message: first\n  severity: info\n"...)
		}}},
		{Name: "last", Function: rawAnswer{answer: func(s []byte) []byte {
			return append(bytes.ReplaceAll(s, []byte("namespace: shop"), []byte("namespace: prod")), "results:\n- message: last\n  severity: info\n"...)
		}}},
	}
	whole := printWhole(t, steps, []byte(printInput))
	streamed := printStreamed(t, steps, []byte(printInput))
	if diff := cmp.Diff(whole, streamed, cmpopts.IgnoreUnexported(printRun{})); diff != "" {
		t.Errorf("streamed differs from whole (-whole +streamed):\n%s", diff)
	}
	if !streamed.streamed || !strings.Contains(streamed.Out, "replicas: 5") || !strings.Contains(streamed.Out, "message: last") {
		t.Errorf("not streamed, or a step's work is missing:\n%s", streamed.Out)
	}
}

// FuzzRunToPrint: whatever a function answers, the streamed output, runs and error are those of
// the output read and encoded whole.
func FuzzRunToPrint(f *testing.F) {
	list, _, err := DecodeInput([]byte(printInput))
	if err != nil {
		f.Fatal(err)
	}
	for _, a := range printAnswers() {
		if a.name == "over the node budget" {
			continue
		}
		sent, err := list.Encode(YAML)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(a.answer(sent), false)
	}
	f.Fuzz(func(t *testing.T, answer []byte, stream bool) {
		steps := []Step{{Name: "answer", Function: rawAnswer{answer: func([]byte) []byte { return answer }}}}
		input := printInput
		if stream {
			input = printInputStream
		}
		whole := printWhole(t, steps, []byte(input))
		streamed := printStreamed(t, steps, []byte(input))
		if diff := cmp.Diff(whole, streamed, cmpopts.IgnoreUnexported(printRun{})); diff != "" {
			t.Fatalf("streamed differs from whole (-whole +streamed):\n%s", diff)
		}
	})
}

// BenchmarkRunToPrint: printing 20 MiB of generated ConfigMaps streamed, against reading and
// encoding them whole (x-whole-cpu: the streamed run's time over the whole one's).
func BenchmarkRunToPrint(b *testing.B) {
	var gen bytes.Buffer
	gen.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	for i := 0; gen.Len() < 20<<20; i++ {
		fmt.Fprintf(&gen, "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: generated-%d\n    labels:\n      app: gen\n  data:\n", i)
		for k := range 16 {
			fmt.Fprintf(&gen, "    key-%02d: %s-%d\n", k, strings.Repeat("x", 100), i)
		}
	}
	steps := []Step{{Name: "gen", Function: rawAnswer{answer: func([]byte) []byte { return gen.Bytes() }}}}
	input := []byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n")
	var whole, streamed time.Duration
	for b.Loop() {
		t0 := time.Now()
		w := printWhole(b, steps, input)
		t1 := time.Now()
		s := printStreamed(b, steps, input)
		streamed += time.Since(t1)
		whole += t1.Sub(t0)
		if !s.streamed || s.Out != w.Out {
			b.Fatalf("streamed %v, same output %v", s.streamed, s.Out == w.Out)
		}
	}
	b.ReportMetric(float64(streamed)/float64(whole), "x-whole-cpu")
}
