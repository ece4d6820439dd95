// Package invoke runs functions over one input, as `fn run` and `fn proxy` do: it reads the
// function configs and the input (a package directory, or a ResourceList or stream of resources on
// standard input), has the configs prepared while the input is read, runs the pipeline, and works
// out what comes of it: bytes to print in the input's shape, or the changes to the package under
// its write rule (fn.Package.Writable), which it writes. It prints nothing: Run's fn.Report says
// what to print.
package invoke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// Preparer readies function configs as pipeline steps; fn/runner's Runner is one. When a config is
// invalid, the results say why and nothing is to run.
type Preparer interface {
	Prepare(ctx context.Context, configs []*yaml.RNode) ([]fn.Step, []fn.FunctionResults, error)
}

// InputError is input that could not be read or understood: a config file, standard input, the
// package directory, or no function to run at all. Nothing ran. Commands report it as a usage
// error.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ErrNoFunction: no config file was given and the input holds no functionConfig (an InputError).
var ErrNoFunction = errors.New("no function to run")

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// Request is one run.
type Request struct {
	// ConfigFiles hold the function configs: every document of every file, in order. With none, the
	// functionConfig of a ResourceList on Stdin is run.
	ConfigFiles []string
	// Configs are function configs made by the caller (fn run --image's ConfigMap), run after
	// those of ConfigFiles.
	Configs []*yaml.RNode
	// Dir is the package directory to run over and write back into; "" reads Stdin instead.
	Dir string
	// Stdin holds a ResourceList or a stream of resources (YAML or JSON) when Dir is "".
	Stdin io.Reader
	// DryRun returns the resulting resources of a package, with their path annotations, as a YAML
	// ResourceList to print instead of changes to write; it is refused where the write would be.
	DryRun bool
	// ResultsDir, when set, receives the results (fn.WriteResults) of a run that got as far as its
	// functions, whether it succeeded or not.
	ResultsDir string
}

// Outcome is what comes of a pipeline over a package (PackageOutput).
type Outcome struct {
	// Output is what to print: a dry run's list, or the resources for another tool. It is nil when
	// the result goes into the package directory.
	Output []byte
	// Changes are the files Apply writes or deletes.
	Changes []fn.FileChange

	pkg *fn.Package
}

// Apply writes the changes into the package directory; it does nothing when there is none.
func (o *Outcome) Apply() error {
	if o.pkg == nil {
		return nil
	}
	return o.pkg.Apply(o.Changes)
}

// source is the input as read: the resources, and what they came from.
type source struct {
	items []*yaml.RNode
	pkg   *fn.Package
	in    fn.Input
	list  *fn.ResourceList
	err   error
}

// Run reads the request's configs and input, prepares the configs with p while the input is read,
// runs them, and writes the result back into the package directory (or leaves it in the report's
// Output to print). What to be written is worked out before the results are written, so that a run
// rejected there (a path the write rule refuses, two resources at one path and index) is in them;
// nothing is written when the run fails. The report is never nil; its Err is the error returned.
func Run(ctx context.Context, p Preparer, req Request) (*fn.Report, error) {
	rep := &fn.Report{}
	ran, out := run(ctx, p, req, rep)
	if ran && req.ResultsDir != "" {
		if err := rep.WriteResults(req.ResultsDir); err != nil {
			rep.Err = err
		}
	}
	if rep.Err == nil && out != nil {
		if err := out.Apply(); err != nil {
			rep.Err = err
		} else if out.pkg != nil {
			rep.Changes = out.Changes
		}
	}
	return rep, rep.Err
}

// run fills the report up to the write: ran says the run got as far as preparing its functions,
// and out is what is to be written.
func run(ctx context.Context, p Preparer, req Request, rep *fn.Report) (ran bool, out *Outcome) {
	configs, err := ReadConfigs(req.ConfigFiles)
	if err != nil {
		rep.Fail(err, true)
		return false, nil
	}
	configs = append(configs, req.Configs...)
	// the input is read and parsed while the functions are resolved and fetched; a config file
	// inside the package is not function input and its file is left as it is, as kpt fn eval
	// leaves its --fn-config
	read := make(chan source, 1)
	go func() { read <- readSource(req, req.ConfigFiles) }()
	var got source
	if len(configs) == 0 {
		got = <-read
		if got.err == nil && got.list != nil && got.list.FunctionConfig != nil {
			configs = []*yaml.RNode{got.list.FunctionConfig}
		}
		read <- got
	}
	if len(configs) == 0 {
		if got.err != nil {
			rep.Fail(got.err, true)
		} else {
			rep.Fail(&InputError{Err: ErrNoFunction}, true)
		}
		return false, nil
	}
	steps, invalid, prepErr := p.Prepare(ctx, configs)
	got = <-read
	if got.err != nil {
		var ie *InputError
		rep.Fail(got.err, errors.As(got.err, &ie))
		return false, nil
	}
	if got.pkg != nil {
		rep.Skipped = got.pkg.Skipped
	}
	if prepErr != nil {
		rep.Runs = invalid
		rep.Fail(prepErr, false)
		return true, nil
	}
	if got.pkg == nil {
		return true, printed(ctx, steps, got, rep)
	}
	items, runs, runErr := fn.RunInPackage(ctx, steps, got.items)
	rep.Runs, rep.Steps = runs, fn.StepLines(runs)
	if runErr != nil {
		rep.Fail(runErr, false)
		return true, nil
	}
	out, err = output(got, req.DryRun, items)
	if err != nil {
		rep.Reject("krm-catalog fn run: write", err)
		return true, nil
	}
	rep.Output = out.Output
	return true, out
}

// printed runs the steps over standard input and leaves what is printed in the report: in the
// input's shape, the whole output, or a writer of it item by item when the last step's output is
// large (fn.RunToPrint: only printed, it is never held as trees).
func printed(ctx context.Context, steps []fn.Step, got source, rep *fn.Report) *Outcome {
	p, runs, err := fn.RunToPrint(ctx, steps, got.items, fn.Print{APIVersion: got.list.APIVersion, FunctionConfig: got.list.FunctionConfig, In: got.in})
	rep.Runs, rep.Steps = runs, fn.StepLines(runs)
	if err != nil {
		rep.Fail(err, false)
		return nil
	}
	if p.Streamed() {
		rep.OutputTo = p
		return &Outcome{}
	}
	data, err := p.Encode()
	if err != nil {
		rep.Reject("krm-catalog fn run: write", err)
		return nil
	}
	rep.Output = data
	return &Outcome{Output: data}
}

// output plans the changes to the package directory, or encodes a dry run's list.
func output(got source, dryRun bool, items []*yaml.RNode) (*Outcome, error) {
	dest := WriteBack
	if dryRun {
		dest = DryRun
	}
	return PackageOutput(got.pkg, items, dest)
}

// Destination is where a package's resulting resources go.
type Destination int

const (
	// WriteBack plans the changes to the package directory (fn.Package.Plan).
	WriteBack Destination = iota
	// DryRun prints the resources, path annotations included, as a preview of WriteBack: the write
	// rule applies, so a dry run refuses exactly what the write would.
	DryRun
	// Print prints the resources for another tool (fn render --output stdout). Nothing is written
	// into the package, so the write rule does not apply, as kpt's ByteWriter applies none.
	Print
)

func (d Destination) String() string {
	switch d {
	case WriteBack:
		return "write-back"
	case DryRun:
		return "dry-run"
	case Print:
		return "print"
	}
	return fmt.Sprintf("Destination(%d)", int(d))
}

// PackageOutput is what comes of a pipeline over a package: the changes that writing its resources
// back makes (fn.Package.Plan: the write rule holds, or nothing is to be written), or, to print,
// its resources with their path annotations as a YAML ResourceList. A DryRun is refused with
// Plan's error wherever WriteBack would be.
func PackageOutput(pkg *fn.Package, items []*yaml.RNode, dest Destination) (*Outcome, error) {
	if dest != Print {
		changes, err := pkg.Plan(items)
		if err != nil {
			return nil, err
		}
		if dest == WriteBack {
			return &Outcome{Changes: changes, pkg: pkg}, nil
		}
	}
	data, err := (&fn.ResourceList{Items: items}).Encode(fn.YAML)
	if err != nil {
		return nil, err
	}
	return &Outcome{Output: data}, nil
}

// ReadConfigs reads function configs: every document of every file, in order.
func ReadConfigs(files []string) (configs []*yaml.RNode, err error) {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, &InputError{Err: fmt.Errorf("read function config: %w", err)}
		}
		rl, _, err := fn.DecodeInput(data)
		if err != nil {
			return nil, inputErrorf("function config %s: %w", f, err)
		}
		configs = append(configs, rl.Items...)
	}
	return configs, nil
}

// readSource reads the input; the files named in exclude are left out of a package they are in.
func readSource(req Request, exclude []string) source {
	if req.Dir == "" {
		data, err := ReadInput(req.Stdin)
		if err != nil {
			return source{err: err}
		}
		list, in, err := fn.DecodeInput(data)
		if err != nil {
			return source{err: inputErrorf("standard input: %w", err)}
		}
		return source{items: list.Items, in: in, list: list}
	}
	pkg, items, err := fn.ReadPackage(req.Dir, exclude...)
	if err != nil {
		return source{err: &InputError{Err: err}}
	}
	// the Kptfiles are function input too, as kpt fn eval gives them (fix, set-project-id and
	// generate-kpt-pkg-docs read them)
	kptfiles, err := pkg.ReadKptfiles()
	if err != nil {
		return source{err: &InputError{Err: err}}
	}
	return source{items: append(items, kptfiles...), pkg: pkg}
}

// ReadInput reads standard input up to the ResourceList size limit (one byte more, so that the
// decoder reports an input above it).
func ReadInput(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, fn.MaxResourceListBytes+1))
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("read standard input: %w", err)}
	}
	return data, nil
}

// Proxy runs, over a ResourceList, the function its functionConfig names, as a KRM function that
// stands in for it would: the config.kubernetes.io/function annotation (how the calling tool
// started the proxy) is ignored, and a failure comes back in the list's results as well as in the
// error. The output is the ResourceList in the input's format; with an error, it holds the input's
// items.
func Proxy(ctx context.Context, p Preparer, data []byte) ([]byte, error) {
	list, format, err := fn.DecodeResourceList(data)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	if list.FunctionConfig == nil {
		return nil, inputErrorf("the ResourceList has no functionConfig to resolve")
	}
	cfg := list.FunctionConfig.Copy()
	for _, k := range []string{resolver.FunctionAnnotation, "config.k8s.io/function"} {
		if err := cfg.PipeE(yaml.ClearAnnotation(k)); err != nil {
			return nil, err
		}
	}
	out, runs, runErr := runConfigs(ctx, p, []*yaml.RNode{cfg}, list.Items)
	res := &fn.ResourceList{APIVersion: list.APIVersion, Items: out, FunctionConfig: list.FunctionConfig}
	if runErr != nil {
		res.Items = list.Items
	}
	for _, run := range runs {
		res.Results = append(res.Results, run.Results...)
	}
	// an invalid config already has its violations as results
	if runErr != nil && len(res.Results) == 0 {
		res.Results = append(res.Results, fn.Result{Message: runErr.Error(), Severity: fn.SeverityError})
	}
	enc, err := res.Encode(format)
	if err != nil {
		return nil, err
	}
	return enc, runErr
}

func runConfigs(ctx context.Context, p Preparer, configs, items []*yaml.RNode) ([]*yaml.RNode, []fn.FunctionResults, error) {
	steps, invalid, err := p.Prepare(ctx, configs)
	if err != nil {
		return nil, invalid, err
	}
	return fn.Run(ctx, steps, items)
}
