// Command verdictfn is the KRM function of the verdict conformance matrix (TestVerdictMatrix): one
// program, built on pkg/krmfn as the example functions are, that behaves as the kind of its
// functionConfig says, the same way whether it runs once as a process (spec v1) or as a server
// (spec v2, --http-addr):
//
//   - VerdictOK annotates every item and reports an info result and a warning;
//   - VerdictErrors and VerdictServerErrors report two error results (exit 1; a server answers them);
//   - VerdictExit writes to standard error and exits 3 without results (a server exits with it);
//   - VerdictCrash panics outside any handler, which ends the process (exit 2);
//   - VerdictHang never answers;
//   - VerdictGarbage writes something that is not a ResourceList (and exits 0; a server answers it);
//   - VerdictOutside moves an item to a path outside the package.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn"
)

// Annotation is what VerdictOK sets on every item.
const Annotation = "verdict.example.com/seen"

// garbage is what VerdictGarbage writes instead of a ResourceList.
const garbage = "this is not a ResourceList\n"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	addr := os.Getenv(krmfn.EnvHTTPAddress)
	args := os.Args[1:]
	for i, a := range args {
		if a == "--http-addr" && i+1 < len(args) {
			addr = args[i+1]
		} else if v, ok := strings.CutPrefix(a, "--http-addr="); ok {
			addr = v
		}
	}
	if addr != "" {
		os.Exit(serve(ctx, addr))
	}
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if before(data) {
		os.Stdout.WriteString(garbage)
		os.Exit(0)
	}
	os.Exit(krmfn.Run(ctx, process, nil, "", bytes.NewReader(data), os.Stdout, os.Stderr))
}

// serve is krmfn's server, but for the list that asks for garbage.
func serve(ctx context.Context, addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h := krmfn.Handler(process)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if before(data) {
			w.Header().Set("Content-Type", r.Header.Get("Accept"))
			io.WriteString(w, garbage)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		h.ServeHTTP(w, r)
	})}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Fprintln(os.Stderr, "serving KRM function (spec v2) on", ln.Addr())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// before does what happens before the list is processed, in both modes: exiting, crashing,
// hanging; it reports whether the answer is to be garbage.
func before(data []byte) bool {
	rl, _, err := krmfn.DecodeResourceList(data)
	if err != nil || rl.FunctionConfig == nil {
		return false
	}
	switch rl.FunctionConfig.GetKind() {
	case "VerdictExit":
		fmt.Fprintln(os.Stderr, "verdictfn: giving up")
		os.Exit(3)
	case "VerdictCrash":
		go func() { panic("verdictfn: crashed") }()
		time.Sleep(time.Hour)
	case "VerdictHang":
		time.Sleep(time.Hour)
	case "VerdictGarbage":
		return true
	}
	return false
}

func process(rl *krmfn.ResourceList) error {
	switch rl.FunctionConfig.GetKind() {
	case "VerdictOK":
		for _, it := range rl.Items {
			if err := it.PipeE(yaml.SetAnnotation(Annotation, "true")); err != nil {
				return err
			}
		}
		rl.Results = append(rl.Results,
			krmfn.Result{Severity: krmfn.SeverityInfo, Message: "annotated every resource"},
			krmfn.Result{Severity: krmfn.SeverityWarning, Message: "a warning is not a failure"})
	case "VerdictErrors", "VerdictServerErrors":
		for _, it := range rl.Items {
			if it.GetKind() != "Deployment" {
				continue
			}
			ref := &krmfn.ResourceRef{APIVersion: it.GetApiVersion(), Kind: it.GetKind(), Name: it.GetName()}
			rl.Results = append(rl.Results,
				krmfn.Result{Severity: krmfn.SeverityError, Message: "no cpu limit", ResourceRef: ref,
					Field: &krmfn.Field{Path: "spec.template.spec.containers[0].resources.limits.cpu"}, File: &krmfn.File{Path: "deployment.yaml"}},
				krmfn.Result{Severity: krmfn.SeverityError, Message: "no memory limit", ResourceRef: ref,
					Field: &krmfn.Field{Path: "spec.template.spec.containers[0].resources.limits.memory"}, File: &krmfn.File{Path: "deployment.yaml"}})
		}
	case "VerdictOutside":
		for _, it := range rl.Items {
			if it.GetKind() != "Deployment" {
				continue
			}
			for _, a := range []string{kioutil.PathAnnotation, kioutil.LegacyPathAnnotation} {
				if err := it.PipeE(yaml.SetAnnotation(a, "../outside.yaml")); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
