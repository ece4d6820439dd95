// Package starlark runs KRM functions written in starlark, in-process with go.starlark.net, as
// kpt's starlark function (StarlarkRun) does: the script reads and changes ctx.resource_list (a dict
// with items, functionConfig and results), reads the Kubernetes OpenAPI document as ctx.open_api,
// loads kpt's modules (encoding/json.star, re.star, ...), and fail() or any other script error
// becomes an error result as kpt reports it; print() writes to standard error. Dicts a script
// creates are written with their keys in kpt's order. A script has no file or environment access,
// reaches the network (http.star, xlsx.star) only when its Function allows it, and is bounded in
// execution steps and wall time, and, run in a Sandbox process, in memory.
package starlark

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

// Defaults bound a script that does not finish: a legitimate function over thousands of resources
// takes a few million steps.
const (
	DefaultMaxSteps = 100_000_000
	DefaultTimeout  = 30 * time.Second
)

// ErrLimit: a script ran past its step, time or memory budget.
var ErrLimit = errors.New("starlark script exceeded its limit")

// Function runs one script.
type Function struct {
	// Name is the script's file name in messages.
	Name   string
	Script string
	// MaxSteps bounds the starlark execution steps; 0 means DefaultMaxSteps.
	MaxSteps uint64
	// Timeout bounds the wall time; 0 means DefaultTimeout.
	Timeout time.Duration
	// Stderr receives print() output; nil discards it.
	Stderr io.Writer
	// Sandbox, when set, runs the script in a child process bounded in memory.
	Sandbox *Sandbox
	// Network lets the script's http.star calls and xlsx.get_url reach the network (the run was
	// allowed it); without it each such call fails with ErrNoNetwork. The calls end with the
	// script's time bound.
	Network bool
	// Kpt runs the script as kpt's starlark function (krm-functions-catalog functions/go/starlark)
	// runs the script of a StarlarkRun or a ConfigMap: ctx.resource_list holds no results and
	// results the script sets there are dropped, and the items come back in the order that
	// function's SDK writes them (sorted by apiVersion, kind, namespace and name). Without it (a
	// catalog's starlark runtime, a script named by path) the script reports results in
	// ctx.resource_list["results"], and the items keep the order the script left them in.
	Kpt bool
}

// fileOptions are the language options of kpt's starlark runtime: while loops, recursion, sets
// and top-level statements (the step bound keeps them finite).
func fileOptions() *syntax.FileOptions {
	return &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}
}

// Run implements fn.Function. With a Sandbox the script runs in a child process bounded in memory;
// without one, in this process, bounded in steps and time only.
func (f *Function) Run(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	if f.Sandbox != nil {
		return f.Sandbox.run(ctx, f, in)
	}
	stderr := f.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	return f.execute(ctx, in, stderr).result(in)
}

// outcome is what running a script came to, in a form that crosses from the sandbox process.
type outcome struct {
	// List is the output when the script ran to its end.
	List *fn.ResourceList `json:"-"`
	// ScriptError is a script's error (fail() or any other), which becomes an error result.
	ScriptError string `json:"scriptError,omitempty"`
	// Limit says which bound the script ran past.
	Limit string `json:"limit,omitempty"`
	// Failure is any other error: the list could not be converted to or from starlark.
	Failure string `json:"failure,omitempty"`
	// Printed is the start of what the script printed, kept for its results.
	Printed string `json:"printed,omitempty"`
}

// result is the outcome as Run returns it: a script error is an error result, as kpt reports it,
// with the items unchanged.
func (o outcome) result(in *fn.ResourceList) (*fn.ResourceList, error) {
	switch {
	case o.Limit != "":
		return nil, &fn.FunctionError{Err: fmt.Errorf("%w: %s", ErrLimit, o.Limit)}
	case o.Failure != "":
		return nil, &fn.FunctionError{Err: errors.New(o.Failure)}
	case o.ScriptError != "":
		out := &fn.ResourceList{APIVersion: in.APIVersion, Items: in.Items, FunctionConfig: in.FunctionConfig}
		out.Results = append(append([]fn.Result(nil), in.Results...), fn.Result{Message: o.ScriptError, Severity: fn.SeverityError})
		// what kpt's starlark function says on standard error when it fails
		out.Stderr = o.Printed + "failed to evaluate function: error: function failure"
		return out, nil
	}
	out := o.List
	out.APIVersion, out.FunctionConfig = in.APIVersion, in.FunctionConfig
	// as kpt's starlark function, which prints each line with a newline between them
	out.Stderr = strings.TrimSuffix(o.Printed, "\n")
	return out, nil
}

// execute runs the script over in; print() and backtraces go to stderr.
func (f *Function) execute(ctx context.Context, in *fn.ResourceList, stderr io.Writer) outcome {
	rl, err := toStarlarkList(in, f.Kpt)
	if err != nil {
		return outcome{Failure: fmt.Sprintf("convert the ResourceList for starlark: %v", err)}
	}
	// what the script prints is passed through and kept for the step's results
	var printed strings.Builder
	thread := &starlark.Thread{
		Name: f.Name,
		Print: func(_ *starlark.Thread, msg string) {
			fmt.Fprintln(stderr, msg)
			if printed.Len() < maxPrinted {
				printed.WriteString(msg + "\n")
			}
		},
	}
	maxSteps := f.MaxSteps
	if maxSteps == 0 {
		maxSteps = DefaultMaxSteps
	}
	thread.SetMaxExecutionSteps(maxSteps)
	timeout := f.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	timer := time.AfterFunc(timeout, func() { thread.Cancel(fmt.Sprintf("wall time of %s exceeded", timeout)) })
	defer timer.Stop()
	stop := context.AfterFunc(ctx, func() { thread.Cancel(context.Cause(ctx).Error()) })
	defer stop()
	// a request the script makes ends with the script: its wall time, or the caller's context
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n := netAccess{ctx: callCtx}
	if f.Network {
		n.client = &http.Client{}
	}
	thread.Load = load(modules(n))

	predeclared := starlark.StringDict{"ctx": &scriptContext{resourceList: rl, environment: starlark.NewDict(0)}}
	name := f.Name
	if name == "" {
		name = "script.star"
	}
	_, execErr := starlark.ExecFileOptions(fileOptions(), thread, name, f.Script, predeclared)
	if execErr != nil {
		msg := execErr.Error()
		if i := strings.Index(msg, "Starlark computation cancelled: "); i >= 0 {
			reason := msg[i+len("Starlark computation cancelled: "):]
			return outcome{Limit: fmt.Sprintf("%s (after %d steps; the bound is %d steps and %s)", reason, thread.ExecutionSteps(), maxSteps, timeout)}
		}
		// A script error is what kpt's starlark function reports as an error result (the error's
		// message: "fail: <message>" for fail()); the backtrace goes to standard error.
		var evalErr *starlark.EvalError
		if errors.As(execErr, &evalErr) {
			msg = evalErr.Msg
			fmt.Fprintln(stderr, evalErr.Backtrace())
		}
		return outcome{ScriptError: msg, Printed: printed.String()}
	}
	out, err := fromStarlarkList(rl, in, f.Kpt)
	if err != nil {
		return outcome{Failure: err.Error()}
	}
	return outcome{List: out, Printed: printed.String()}
}

// maxPrinted bounds what a script's prints keep for its results (all of it is passed through).
const maxPrinted = 8 << 10

// toStarlarkList builds ctx.resource_list. kpt's starlark function gives the script apiVersion,
// kind, items and functionConfig (its SimpleFilter's WrapResources), no results.
func toStarlarkList(in *fn.ResourceList, kpt bool) (*starlark.Dict, error) {
	items := make([]starlark.Value, 0, len(in.Items))
	for _, it := range in.Items {
		v, err := toStarlark(it.YNode(), 0)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	d := starlark.NewDict(4)
	apiVersion := in.APIVersion
	if apiVersion == "" {
		apiVersion = fn.ResourceListAPIVersion
	}
	_ = d.SetKey(starlark.String("apiVersion"), starlark.String(apiVersion))
	_ = d.SetKey(starlark.String("kind"), starlark.String(fn.ResourceListKind))
	_ = d.SetKey(starlark.String("items"), starlark.NewList(items))
	if in.FunctionConfig != nil {
		fc, err := toStarlark(in.FunctionConfig.YNode(), 0)
		if err != nil {
			return nil, err
		}
		_ = d.SetKey(starlark.String("functionConfig"), fc)
	}
	if kpt {
		return d, nil
	}
	results := make([]starlark.Value, 0, len(in.Results))
	for _, r := range in.Results {
		var n yaml.Node
		if err := n.Encode(r); err != nil {
			return nil, err
		}
		v, err := toStarlark(&n, 0)
		if err != nil {
			return nil, err
		}
		results = append(results, v)
	}
	_ = d.SetKey(starlark.String("results"), starlark.NewList(results))
	return d, nil
}

const maxDepth = 1000

// toStarlark converts a YAML node: mappings to dicts (which keep insertion order), sequences to
// lists, scalars by their resolved tag.
func toStarlark(n *yaml.Node, depth int) (starlark.Value, error) {
	if depth > maxDepth {
		return nil, errors.New("value nested too deeply")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return starlark.None, nil
		}
		return toStarlark(n.Content[0], depth)
	case yaml.AliasNode:
		if n.Alias == nil {
			return starlark.None, nil
		}
		return toStarlark(n.Alias, depth+1)
	case yaml.MappingNode:
		d := starlark.NewDict(len(n.Content) / 2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := toStarlark(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(starlark.String(n.Content[i].Value), v); err != nil {
				return nil, err
			}
		}
		return d, nil
	case yaml.SequenceNode:
		l := make([]starlark.Value, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := toStarlark(c, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return starlark.NewList(l), nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return starlark.None, nil
		case "!!bool":
			var b bool
			if n.Decode(&b) == nil {
				return starlark.Bool(b), nil
			}
		case "!!int":
			if i, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
				return starlark.MakeInt64(i), nil
			}
			if b, ok := new(big.Int).SetString(n.Value, 0); ok {
				return starlark.MakeBigInt(b), nil
			}
		case "!!float":
			var fl float64
			if n.Decode(&fl) == nil {
				return starlark.Float(fl), nil
			}
		}
		return starlark.String(n.Value), nil
	}
	return starlark.None, nil
}

// fromStarlarkList reads the items and results back from ctx.resource_list. As kpt's starlark
// function (kpt), it reads the items alone: its SimpleFilter unwraps items and functionConfig and
// nothing else, and its SDK writes the results it was given (none, from kpt) and the items sorted.
func fromStarlarkList(d *starlark.Dict, in *fn.ResourceList, kpt bool) (*fn.ResourceList, error) {
	out := &fn.ResourceList{APIVersion: in.APIVersion, FunctionConfig: in.FunctionConfig}
	itemsV, found, err := d.Get(starlark.String("items"))
	if err != nil || !found {
		return nil, errors.New(`the script removed ctx.resource_list["items"]`)
	}
	seq, ok := itemsV.(starlark.Indexable)
	if !ok {
		return nil, fmt.Errorf(`ctx.resource_list["items"] is a %s, not a list`, itemsV.Type())
	}
	for i := 0; i < seq.Len(); i++ {
		n, err := fromStarlark(seq.Index(i), 0)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("item %d is not a dict", i)
		}
		out.Items = append(out.Items, yaml.NewRNode(n))
	}
	if kpt {
		out.Results = in.Results
		sdkSort(out.Items)
		return out, nil
	}
	if rv, found, _ := d.Get(starlark.String("results")); found && rv != starlark.None {
		n, err := fromStarlark(rv, 0)
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		if err := n.Decode(&out.Results); err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
	}
	return out, nil
}

// sdkSort puts items in the order kpt's starlark function writes them: its SDK (krm-functions-sdk
// go/fn, ResourceList.ToYAML) sorts them with sort.Sort by "apiVersion kind namespace name", each a
// string field or "" (KubeObjects.Less). sort.Sort is not stable; given the same comparisons it
// makes the same moves, so items of one key come out as they do there.
func sdkSort(items []*yaml.RNode) {
	s := sdkOrder{items: items, keys: make([]string, len(items))}
	for i, it := range items {
		s.keys[i] = stringField(it, "apiVersion") + " " + stringField(it, "kind") + " " +
			stringField(it, "metadata", "namespace") + " " + stringField(it, "metadata", "name")
	}
	sort.Sort(s)
}

type sdkOrder struct {
	items []*yaml.RNode
	keys  []string
}

func (s sdkOrder) Len() int           { return len(s.items) }
func (s sdkOrder) Less(i, j int) bool { return s.keys[i] < s.keys[j] }
func (s sdkOrder) Swap(i, j int) {
	s.items[i], s.items[j] = s.items[j], s.items[i]
	s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
}

// stringField is the field at path when it is a string, as the SDK reads it (GetNestedString),
// else "".
func stringField(n *yaml.RNode, path ...string) string {
	v, err := n.Pipe(yaml.Lookup(path...))
	if err != nil || v == nil || v.YNode().Kind != yaml.ScalarNode || v.YNode().ShortTag() != "!!str" {
		return ""
	}
	return v.YNode().Value
}

// kptKeyOrder orders a dict's items as kpt's starlark function writes them: its SimpleFilter turns
// the resource list into Go maps (starlib's util.Unmarshal) and writes them with yaml.Marshal, which
// sorts every map's keys with yaml.v3's key order (yamlKeyLess); nothing reorders them afterwards.
// kpt then gives the fields an input item already had their order back (as fn.Restore does here),
// so the order shows on what the script created.
func kptKeyOrder(items []starlark.Tuple) []starlark.Tuple {
	key := func(t starlark.Tuple) string { s, _ := starlark.AsString(t[0]); return s }
	sort.SliceStable(items, func(a, b int) bool { return yamlKeyLess(key(items[a]), key(items[b])) })
	return items
}

// yamlKeyLess is the order yaml.v3's encoder gives string map keys: letters compare as runes, a run
// of digits compares by its value (so "a2" < "a10"), a letter sorts after a digit or punctuation
// unless the characters before were digits ("1a" < "1-"), and a prefix sorts first. It walks both
// keys by rune, without allocating.
func yamlKeyLess(a, b string) bool {
	afterDigit := false
	// separate offsets: an invalid byte and a written U+FFFD are the same rune of different sizes
	ia, ib := 0, 0
	for ia < len(a) && ib < len(b) {
		ca, sa := utf8.DecodeRuneInString(a[ia:])
		cb, sb := utf8.DecodeRuneInString(b[ib:])
		if ca == cb {
			afterDigit = unicode.IsDigit(ca)
			ia, ib = ia+sa, ib+sb
			continue
		}
		la, lb := unicode.IsLetter(ca), unicode.IsLetter(cb)
		switch {
		case la && lb:
			return ca < cb
		case la != lb:
			// after digits, a letter ends the number and sorts first; elsewhere it sorts last
			return la == afterDigit
		}
		var na, nb int64
		if (ca == '0' || cb == '0') && nonZeroBefore(a[:ia]) {
			// yaml.v3 counts a zero inside a number as a digit of that number, not a leading zero
			na, nb = 1, 1
		}
		na, ra := digitRun(a, ia, na)
		nb, rb := digitRun(b, ib, nb)
		if na != nb {
			return na < nb
		}
		if ra != rb {
			return ra < rb
		}
		return ca < cb
	}
	return ia == len(a) && ib < len(b)
}

// digitRun reads the run of digits starting at byte i onto n (int64 arithmetic, wrapping as
// yaml.v3's does) and returns it with the run's length in runes.
func digitRun(s string, i int, n int64) (int64, int) {
	runes := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsDigit(r) {
			break
		}
		n = n*10 + int64(r-'0')
		i += size
		runes++
	}
	return n, runes
}

// nonZeroBefore reports whether the digits ending the prefix (the same in both keys) hold a non-zero one.
func nonZeroBefore(prefix string) bool {
	for len(prefix) > 0 {
		r, size := utf8.DecodeLastRuneInString(prefix)
		if !unicode.IsDigit(r) {
			return false
		}
		if r != '0' {
			return true
		}
		prefix = prefix[:len(prefix)-size]
	}
	return false
}

// fromStarlark converts a starlark value back to a YAML node.
func fromStarlark(v starlark.Value, depth int) (*yaml.Node, error) {
	if depth > maxDepth {
		return nil, errors.New("value nested too deeply")
	}
	switch t := v.(type) {
	case starlark.NoneType:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	case starlark.Bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(bool(t))}, nil
	case starlark.Int:
		// kpt's function turns the script's values into Go values (starlib's util.Unmarshal), where
		// an int is 64 bits
		if _, ok := t.Int64(); !ok {
			return nil, fmt.Errorf("%s out of range (want value in signed 64-bit range)", t)
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: t.String()}, nil
	case starlark.Float:
		// as yaml.v3's Marshal writes a float64, which kpt's function then reads back: a float of
		// no fraction is the plain 6 (an !!int to a reader), not 6.0 or !!float 6
		f := float64(t)
		v, tag := strconv.FormatFloat(f, 'g', -1, 64), "!!int"
		switch {
		case math.IsInf(f, 1):
			v, tag = ".inf", "!!float"
		case math.IsInf(f, -1):
			v, tag = "-.inf", "!!float"
		case math.IsNaN(f):
			v, tag = ".nan", "!!float"
		case strings.ContainsAny(v, ".e"):
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}, nil
	case starlark.String:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(t)}, nil
	case *starlark.Dict:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, kv := range kptKeyOrder(t.Items()) {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is a %s, not a string", kv[0], kv[0].Type())
			}
			c, err := fromStarlark(kv[1], depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(k)}, c)
		}
		return n, nil
	case starlark.Indexable: // list, tuple
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for i := 0; i < t.Len(); i++ {
			c, err := fromStarlark(t.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	}
	return nil, fmt.Errorf("a %s cannot be part of a resource", v.Type())
}
