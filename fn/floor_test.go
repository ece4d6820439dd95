package fn

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

// BenchmarkPerItemFloor measures the least a pipeline that restores comments, field order and
// styles could cost around a function, to compare with what `fn run` costs
// (BenchmarkFnRunVsBareFunction in e2e/functions). A helper process (this test binary) does only
// the work such a pipeline cannot leave out, one resource at a time in recycled node memory, so
// that neither list is ever held as a whole tree: read each input resource, tag it with an id,
// write it on the wire; run the function; read each output resource, read its input resource
// again, restore it from that, write it. No catalog, no skip digest, no annotation bookkeeping,
// no second step: a floor, not a pipeline. Its CPU (the function's included, as for `fn run`) is
// reported against the bare function's on the same list, interleaved in one run.
func BenchmarkPerItemFloor(b *testing.B) {
	const calls = 5
	dir := b.TempDir()
	function := filepath.Join(dir, "set-namespace")
	// built as the end-to-end tests build it: static, as functions ship
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", function, "../examples/functions/set-namespace")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the example function: %v\n%s", err, out)
	}
	input := fntest.Deployments(1000, "bench")
	rl, _, err := DecodeResourceList(input)
	if err != nil {
		b.Fatal(err)
	}
	jsonInput, err := rl.Encode(JSON)
	if err != nil {
		b.Fatal(err)
	}
	type command struct {
		name, mode, want string
		in               []byte
		cpu              time.Duration
	}
	run := func(c *command) {
		argv := []string{function}
		if c.mode != "" {
			argv = []string{os.Args[0], "-test.run=^TestPerItemFloorHelper$"}
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), floorModeEnv+"="+c.mode, floorFunctionEnv+"="+function)
		cmd.Stdin = bytes.NewReader(c.in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || !bytes.Contains(out, []byte(c.want)) {
			b.Fatalf("%s: %v\n%s", c.name, err, stderr.String())
		}
		c.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	// the restoring floors must give the input's comment back, which the JSON wire drops
	const restored = "tier: backend # the tier"
	bare := &command{name: "bare", want: "namespace: bench", in: input}
	bareJSON := &command{name: "function-on-json", want: `"namespace":"bench"`, in: jsonInput}
	floorYAML := &command{name: "floor-yaml-wire", mode: "yaml", want: restored, in: input}
	floorJSON := &command{name: "floor-json-wire", mode: "json", want: restored, in: input}
	floorNoRestore := &command{name: "floor-json-wire-no-restore", mode: "json-no-restore", want: "namespace: bench", in: input}
	all := []*command{bare, bareJSON, floorYAML, floorJSON, floorNoRestore}
	for b.Loop() {
		for range calls { // interleaved, so that all see the same machine
			for _, c := range all {
				run(c)
			}
		}
	}
	n := float64(b.N * calls)
	for _, c := range all {
		b.ReportMetric(float64(c.cpu.Microseconds())/1000/n, "cpu-ms-"+c.name+"/run")
	}
	for _, c := range all[2:] {
		b.ReportMetric(float64(c.cpu)/float64(bare.cpu), "x-"+c.name)
	}
}

const (
	floorModeEnv     = "KRM_CATALOG_FLOOR_MODE"
	floorFunctionEnv = "KRM_CATALOG_FLOOR_FUNCTION"
)

// TestPerItemFloorHelper is the helper process of BenchmarkPerItemFloor; it does nothing unless
// started by it.
func TestPerItemFloorHelper(t *testing.T) {
	mode := os.Getenv(floorModeEnv)
	if mode == "" {
		t.Skip("the helper process of BenchmarkPerItemFloor")
	}
	out, err := perItemFloor(mode, os.Getenv(floorFunctionEnv), os.Stdin)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.Write(out)
	os.Exit(0) // nothing after the output: no test summary
}

// perItemFloor runs function over the YAML ResourceList on r, one resource at a time (see
// BenchmarkPerItemFloor); mode is yaml or json (the wire), or json-no-restore.
func perItemFloor(mode, function string, r *os.File) ([]byte, error) {
	in, err := readAll(r, 0)
	if err != nil {
		return nil, err
	}
	s, e, ok := itemsLines(in)
	if !ok {
		return nil, errors.New("the input's items are not a block sequence")
	}
	inSpans := splitBlockItems(in[s+len("items:\n") : e])
	inSlab, outSlab := make([]yaml.Node, 512), make([]yaml.Node, 512)
	var item []byte // one resource written, to be copied into place
	wire := make([]byte, 0, len(in)+len(in)/4)
	onJSON := mode != "yaml"
	if onJSON {
		header, ok := readYAMLFast(append(append([]byte(nil), in[:s]...), in[e:]...))
		if !ok {
			return nil, errors.New("the input's header is not plain YAML")
		}
		wire = append(wire, `{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","functionConfig":`...)
		if wire, err = AppendJSON(wire, mapValue(header[0].Content[0], "functionConfig")); err != nil {
			return nil, err
		}
		wire = append(wire, `,"items":[`...)
	} else {
		wire = append(append(wire, in[:s]...), "items:\n"...)
	}
	for i, span := range inSpans {
		res, err := floorItem(span, inSlab)
		if err != nil {
			return nil, err
		}
		if err := setAnnotation(yaml.NewRNode(res), kioutil.IdAnnotation, "krm-catalog-"+strconv.Itoa(i)); err != nil {
			return nil, err
		}
		if onJSON {
			if i > 0 {
				wire = append(wire, ',')
			}
			if wire, err = AppendJSON(wire, res); err != nil {
				return nil, err
			}
		} else if wire, item, err = appendItem(wire, item, res); err != nil {
			return nil, err
		}
	}
	if onJSON {
		wire = append(wire, "]}\n"...)
	} else {
		wire = append(wire, in[e:]...)
	}

	cmd := exec.Command(function)
	cmd.Stdin = bytes.NewReader(wire)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	out, err := readAll(stdout, len(wire))
	if werr := cmd.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}

	var outSpans [][]byte
	if onJSON {
		s, e, ok := jsonItems(out)
		if !ok {
			return nil, errors.New("the output has no items array")
		}
		outSpans = splitJSONElements(out[s:e])
	} else {
		s, e, ok := itemsLines(out)
		if !ok {
			return nil, errors.New("the output's items are not a block sequence")
		}
		outSpans = splitBlockItems(out[s+len("items:\n") : e])
	}
	result := make([]byte, 0, len(out)+len(out)/8)
	result = append(result, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"...)
	p := newJSONParser()
	for i, span := range outSpans {
		var res *yaml.Node
		if onJSON {
			clear(outSlab)
			p.slab = outSlab
			if res, err = p.decode(span); err != nil {
				return nil, err
			}
		} else if res, err = floorItem(span, outSlab); err != nil {
			return nil, err
		}
		if mode != "json-no-restore" && i < len(inSpans) {
			from, err := floorItem(inSpans[i], inSlab)
			if err != nil {
				return nil, err
			}
			Restore(yaml.NewRNode(from), yaml.NewRNode(res))
			if onJSON {
				restoreLayout(from, res, 0)
			}
		}
		if err := clearAnnotations(yaml.NewRNode(res), kioutil.IdAnnotation); err != nil {
			return nil, err
		}
		if result, item, err = appendItem(result, item, res); err != nil {
			return nil, err
		}
	}
	return result, nil
}

func readAll(r io.Reader, size int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(size + 4096)
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// floorItem reads one item of a block sequence ("- apiVersion: ...") into slab.
func floorItem(span []byte, slab []yaml.Node) (*yaml.Node, error) {
	clear(slab)
	r := itemReader{slab: slab}
	n, ok := r.read(span, 1)
	if !ok {
		return nil, errors.New("an item the fast reader does not read")
	}
	return n, nil
}

// appendItem writes m as an item of a block sequence at column 0, through item.
func appendItem(dst, item []byte, m *yaml.Node) ([]byte, []byte, error) {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{m}}
	wrap := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "items"}, seq}}
	item, ok := appendYAML(item[:0], wrap, false)
	if !ok {
		return nil, nil, errors.New("an item the fast writer does not write")
	}
	return append(dst, item[len("items:\n"):]...), item, nil
}
