package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/gate"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// fixture is a registry holding the artifacts a catalog names.
type fixture struct {
	reg                 *registrytest.Registry
	client              *oci.Client
	execRef, starRef    string // tag references
	execRoot, starRoot  digest.Digest
	linuxBin, darwinBin digest.Digest // layer digests = the sha256 a catalog records
	script              digest.Digest
	image               digest.Digest // a container image
	signer              *sign.Signer
	trusted, stranger   sign.PublicKey
}

func newFixture(t *testing.T, reg *registrytest.Registry) *fixture {
	t.Helper()
	ctx := context.Background()
	cache, err := oci.OpenCache(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{reg: reg, client: oci.NewClient(oci.Options{Cache: cache})}
	trusted := signtest.KeyPair(t, "trusted.pub")
	f.signer, f.trusted = trusted.Signer, trusted.Public
	f.stranger = signtest.KeyPair(t, "stranger.pub").Public
	f.execRef = reg.Host + "/fns/ensure-exec:v1.0.0"
	linux, darwin := []byte("linux binary"), []byte("darwin binary")
	amd64, _ := oci.ParsePlatform("linux/amd64")
	arm64, _ := oci.ParsePlatform("darwin/arm64")
	res, err := f.client.Push(ctx, f.execRef, oci.PushOptions{Kind: oci.KindExec, Files: []oci.File{
		{Data: linux, Title: "ensure", Platform: &amd64}, {Data: darwin, Title: "ensure", Platform: &arm64},
	}})
	if err != nil {
		t.Fatal(err)
	}
	f.execRoot, f.linuxBin, f.darwinBin = res.Descriptor.Digest, digest.FromBytes(linux), digest.FromBytes(darwin)
	f.starRef = reg.Host + "/fns/drop-star:v0.2.0"
	script := []byte("def run(r, fc):\n  pass\n")
	res, err = f.client.Push(ctx, f.starRef, oci.PushOptions{Kind: oci.KindStarlark, Files: []oci.File{{Data: script, Title: "drop.star"}}})
	if err != nil {
		t.Fatal(err)
	}
	f.starRoot, f.script = res.Descriptor.Digest, digest.FromBytes(script)
	f.image = registrytest.PushImage(t, reg.Host+"/fns/set-ns:v1.3.0", "")
	return f
}

// catalogFor writes a catalog naming the fixture's artifacts; edit may change any value first.
func (f *fixture) catalog(t *testing.T, edit map[string]string) string {
	t.Helper()
	v := map[string]string{
		"{{EXEC_URI}}":     "oci://" + f.execRef,
		"{{LINUX_SHA}}":    f.linuxBin.Encoded(),
		"{{DARWIN_SHA}}":   f.darwinBin.Encoded(),
		"{{STAR_REF}}":     f.starRef,
		"{{STAR_SHA}}":     f.script.Encoded(),
		"{{IMAGE}}":        f.reg.Host + "/fns/set-ns:v1.3.0",
		"{{IMAGE_SHA}}":    f.image.Encoded(),
		"{{STAR_URI_PIN}}": "oci://" + f.reg.Host + "/fns/drop-star@" + f.starRoot.String(),
	}
	doc := catalogTemplate
	for k, val := range edit {
		if strings.HasPrefix(k, "{{") {
			v[k] = val
		} else {
			doc = strings.ReplaceAll(doc, k, val) // an edit of the text itself
		}
	}
	for k, val := range v {
		doc = strings.ReplaceAll(doc, k, val)
	}
	path := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const catalogTemplate = `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: gate-test
spec:
  krmFunctions:
    - group: fn.example.com
      names:
        kind: EnsureName
      description: Ensures names.
      publisher: example.com
      versions:
        - name: v1
          runtime:
            exec:
              platforms:
                - bin: ensure
                  os: linux
                  arch: amd64
                  uri: {{EXEC_URI}}
                  sha256: {{LINUX_SHA}}
                - bin: ensure
                  os: darwin
                  arch: arm64
                  uri: {{EXEC_URI}}
                  sha256: {{DARWIN_SHA}}
    - group: fn.example.com
      names:
        kind: DropComments
      description: Drops comments.
      publisher: example.com
      versions:
        - name: v1
          runtime:
            starlark:
              ref: {{STAR_REF}}
              sha256: {{STAR_SHA}}
        - name: v2
          runtime:
            starlark: {{STAR_URI_PIN}}
    - group: fn.example.com
      names:
        kind: SetNamespace
      description: Sets namespaces.
      publisher: example.com
      versions:
        - name: v1
          runtime:
            container:
              image: {{IMAGE}}
              sha256: {{IMAGE_SHA}}
`

func (f *fixture) run(t *testing.T, opts gate.Options, args ...string) gate.Report {
	t.Helper()
	g, err := gate.New(f.client, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := g.Run(context.Background(), args, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// errorsAt lists the findings of a severity about runtimes as "pointer: message". The template
// leaves out version fields the KEP wants, so validation warns about them; those are not what
// these tests look at.
func errorsAt(fs catalog.Findings, sev catalog.Severity) []string {
	var out []string
	for _, f := range fs {
		if f.Severity == sev && strings.Contains(f.Pointer, "/runtime") {
			out = append(out, f.Pointer+": "+f.Message)
		}
	}
	return out
}

func TestGateArtifacts(t *testing.T) {
	t.Parallel()
	for _, reg := range registrytest.Both(t) {
		t.Run(reg.Name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, reg)
			const (
				linuxSha = "/spec/krmFunctions/0/versions/0/runtime/exec/platforms/0/sha256"
				execURI  = "/spec/krmFunctions/0/versions/0/runtime/exec/platforms/0/uri"
				starRef  = "/spec/krmFunctions/1/versions/0/runtime/starlark/ref"
				starSha  = "/spec/krmFunctions/1/versions/0/runtime/starlark/sha256"
				starPin  = "/spec/krmFunctions/1/versions/1/runtime/starlark"
				image    = "/spec/krmFunctions/2/versions/0/runtime/container/image"
			)
			wrong := strings.Repeat("a", 64)
			tests := []struct {
				name string
				edit map[string]string
				want []string // "pointer: message fragment"
			}{
				{"all artifacts match", nil, nil},
				{"exec binary differs from the recorded sha256", map[string]string{"{{LINUX_SHA}}": wrong}, []string{linuxSha + ": the document records sha256 " + wrong}},
				{"exec artifact missing", map[string]string{"{{EXEC_URI}}": "oci://" + reg.Host + "/fns/nothing:v1"}, []string{execURI + ": resolve " + reg.Host + "/fns/nothing:v1: not found", "/spec/krmFunctions/0/versions/0/runtime/exec/platforms/1/uri: resolve"}},
				{"starlark script differs", map[string]string{"{{STAR_SHA}}": wrong}, []string{starSha + ": the document records sha256 " + wrong}},
				{"starlark ref names an exec artifact", map[string]string{"{{STAR_REF}}": f.execRef}, []string{starRef + ": " + f.execRef + " is an exec artifact, not a starlark artifact"}},
				{"pinned starlark digest absent", map[string]string{"{{STAR_URI_PIN}}": "oci://" + reg.Host + "/fns/drop-star@sha256:" + wrong}, []string{starPin + ": "}},
				{"pinned image absent", map[string]string{"{{IMAGE_SHA}}": wrong}, []string{image + ": image " + reg.Host + "/fns/set-ns@sha256:" + wrong}},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					path := f.catalog(t, tc.edit)
					rep := f.run(t, gate.Options{RequirePinned: true}, path)
					got := errorsAt(rep.Findings(), catalog.SeverityError)
					if len(got) != len(tc.want) {
						t.Fatalf("errors:\n%s\nwant %d matching %q", strings.Join(got, "\n"), len(tc.want), tc.want)
					}
					for i := range got {
						if !strings.HasPrefix(got[i], tc.want[i]) {
							t.Errorf("error %d = %q, want it to start with %q", i, got[i], tc.want[i])
						}
					}
					if len(rep.Checks) != 5 {
						t.Errorf("%d artifacts checked, want 5 (2 exec, 2 starlark, 1 image)", len(rep.Checks))
					}
					// Each finding points at the line of its field.
					text, _ := os.ReadFile(path)
					lines := strings.Split(string(text), "\n")
					for _, fd := range rep.Findings() {
						if !strings.Contains(fd.Pointer, "/runtime") {
							continue // validation's own findings; catalog's tests cover their positions
						}
						field := fd.Pointer[strings.LastIndex(fd.Pointer, "/")+1:]
						if fd.Line < 1 || fd.Line > len(lines) || !strings.Contains(lines[fd.Line-1], field+":") {
							t.Errorf("finding at line %d, which is not the line of %s: %+v", fd.Line, field, fd)
						}
					}
				})
			}
		})
	}
}

func TestGateImageTagMoved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, registrytest.Distribution(t))
	// The tag now names another image; the pinned digest still exists.
	registrytest.PushImage(t, f.reg.Host+"/fns/set-ns:v1.3.0", "a rebuild")
	rep := f.run(t, gate.Options{RequirePinned: true}, f.catalog(t, nil))
	if errs := errorsAt(rep.Findings(), catalog.SeverityError); len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
	warns := errorsAt(rep.Findings(), catalog.SeverityWarning)
	if len(warns) != 1 || !strings.Contains(warns[0], "tag v1.3.0 of "+f.reg.Host+"/fns/set-ns now names") {
		t.Errorf("warnings %v, want one about the moved tag", warns)
	}
}

func TestGateSignatures(t *testing.T) {
	t.Parallel()
	f := newFixture(t, registrytest.WithReferrers(t))
	ctx := context.Background()
	path := f.catalog(t, nil)
	// Sign everything but the starlark artifact.
	for _, ref := range []string{f.execRef, f.reg.Host + "/fns/set-ns@" + f.image.String()} {
		if _, err := f.client.Sign(ctx, ref, f.signer, oci.SignOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	unsignedStar := []string{
		"/spec/krmFunctions/1/versions/0/runtime/starlark/ref",
		"/spec/krmFunctions/1/versions/1/runtime/starlark",
	}
	tests := []struct {
		name         string
		opts         gate.Options
		wantErrors   []string
		wantWarnings []string
	}{
		{"required: the unsigned script fails", gate.Options{Keys: []sign.PublicKey{f.trusted}, RequireSignatures: true}, unsignedStar, nil},
		{"not required: a warning", gate.Options{Keys: []sign.PublicKey{f.trusted}}, nil, unsignedStar},
		{"wrong key: everything fails", gate.Options{Keys: []sign.PublicKey{f.stranger}, RequireSignatures: true}, []string{
			"/spec/krmFunctions/0/versions/0/runtime/exec/platforms/0/uri",
			"/spec/krmFunctions/0/versions/0/runtime/exec/platforms/1/uri",
			unsignedStar[0], unsignedStar[1],
			"/spec/krmFunctions/2/versions/0/runtime/container/image",
		}, nil},
		{"no keys: nothing checked", gate.Options{}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := f.run(t, tc.opts, path)
			pointers := func(sev catalog.Severity) []string {
				var out []string
				for _, fd := range rep.Findings() {
					if fd.Severity == sev && (fd.Pointer == "" || strings.Contains(fd.Pointer, "/runtime")) {
						out = append(out, fd.Pointer)
					}
				}
				return out
			}
			if diff := cmp.Diff(tc.wantErrors, pointers(catalog.SeverityError)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, rep.Findings())
			}
			if diff := cmp.Diff(tc.wantWarnings, pointers(catalog.SeverityWarning)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := gate.New(f.client, gate.Options{RequireSignatures: true}); err == nil {
		t.Error("signatures required without keys was accepted")
	}
}

func TestGateInputs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, registrytest.Distribution(t))
	ctx := context.Background()
	body, err := os.ReadFile(f.catalog(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	catRef := f.reg.Host + "/catalogs/gate-test:v1"
	if _, err := f.client.PushCatalog(ctx, catRef, body, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/catalog.yaml" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)

	g, err := gate.New(f.client, gate.Options{RequirePinned: true, HTTPClient: srv.Client(), Keys: []sign.PublicKey{f.trusted}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := g.Run(ctx, []string{"oci://" + catRef, srv.URL + "/catalog.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Inputs != 2 {
		t.Errorf("%d inputs, want 2", rep.Inputs)
	}
	// The catalog read from the registry is itself signature-checked: unsigned, so a warning
	// (signatures are not required), at the input's first line.
	var catalogWarning bool
	for _, fd := range rep.Findings() {
		if fd.File == "oci://"+catRef && fd.Pointer == "" && strings.Contains(fd.Message, "no signature") {
			catalogWarning = true
		}
	}
	if !catalogWarning {
		t.Errorf("no warning about the unsigned oci:// catalog in %v", rep.Findings())
	}

	// Plain http is read from this machine, the rule registries follow.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/catalog.yaml":
			w.Write(body)
		case "/away":
			http.Redirect(w, r, "http://catalogs.invalid/catalog.yaml", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(plain.Close)
	if rep, err := g.Run(ctx, []string{plain.URL + "/catalog.yaml"}, nil); err != nil || rep.Inputs != 1 {
		t.Errorf("plain http on loopback: %d inputs, error %v; want 1 input read", rep.Inputs, err)
	}
	if _, err := g.Run(ctx, []string{plain.URL + "/away"}, nil); err == nil || !strings.Contains(err.Error(), "neither https nor this machine") {
		t.Errorf("redirect from loopback to plain http elsewhere: %v, want it refused before it is followed", err)
	}

	// Refused or unreadable inputs are errors of the run (exit 2), not findings.
	for _, in := range []string{"http://catalogs.invalid/catalog.yaml", srv.URL + "/missing.yaml", "oci://" + f.reg.Host + "/catalogs/none:v1", filepath.Join(t.TempDir(), "missing.yaml")} {
		if _, err := g.Run(ctx, []string{in}, nil); err == nil {
			t.Errorf("%s: read without error", in)
		}
	}
}

func TestGateRequirePinned(t *testing.T) {
	t.Parallel()
	f := newFixture(t, registrytest.Distribution(t))
	// A semver tag without a digest: the KEP's rule, an error unless --require-pinned=false.
	path := f.catalog(t, map[string]string{"\n              sha256: {{IMAGE_SHA}}": ""})
	for _, tc := range []struct {
		pinned bool
		want   catalog.Severity
	}{{true, catalog.SeverityError}, {false, catalog.SeverityWarning}} {
		rep := f.run(t, gate.Options{RequirePinned: tc.pinned}, path)
		var got []catalog.Severity
		for _, fd := range rep.Findings() {
			if fd.Pointer == "/spec/krmFunctions/2/versions/0/runtime/container/image" {
				got = append(got, fd.Severity)
			}
		}
		if diff := cmp.Diff([]catalog.Severity{tc.want}, got); diff != "" {
			t.Errorf("RequirePinned=%v (-want +got):\n%s", tc.pinned, diff)
		}
	}
}

func TestGateOffline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, registrytest.Distribution(t))
	rep := f.run(t, gate.Options{RequirePinned: true, Offline: true}, f.catalog(t, map[string]string{"{{LINUX_SHA}}": strings.Repeat("b", 64)}))
	s := rep.Summarize()
	if s.Artifacts != 0 || rep.Findings().HasErrors() {
		t.Errorf("offline run checked %d artifacts, findings %v", s.Artifacts, rep.Findings())
	}
	// what was not checked is counted, and why, rather than passed over in silence
	if diff := cmp.Diff(map[string]int{gate.SkippedOffline: 5}, s.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if got := s.String(); !strings.HasSuffix(got, "; 0 artifacts checked, 0 failed; 5 not checked (5 offline)") {
		t.Errorf("summary %q", got)
	}
}

// Exec binaries and starlark scripts named by https URL cannot carry a signature: with signatures
// required they fail, naming how to publish them so that they can be; otherwise they are
// downloaded and their sha256 checked, within MaxSize; offline they are skipped, and counted so.
func TestGateHTTPSArtifacts(t *testing.T) {
	t.Parallel()
	bin, script := []byte("an exec binary"), []byte("def run(r, fc):\n  pass\n")
	big := bytes.Repeat([]byte("x"), 4096)
	var hits sync.Map
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := hits.LoadOrStore(r.URL.Path, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		switch r.URL.Path {
		case "/bin":
			w.Write(bin)
		case "/script.star":
			w.Write(script)
		case "/big":
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			w.Write(big)
		case "/big-chunked": // no Content-Length: the limit holds while it streams
			w.(http.Flusher).Flush()
			w.Write(big)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	doc := func(binPath, binSHA string) string {
		return fmt.Sprintf(`apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: https-test
spec:
  krmFunctions:
    - group: fn.example.com
      names:
        kind: EnsureName
      description: Ensures names.
      publisher: example.com
      versions:
        - name: v1
          runtime:
            exec:
              platforms:
                - bin: ensure
                  os: linux
                  arch: amd64
                  uri: %s%s
                  sha256: %s
    - group: fn.example.com
      names:
        kind: DropComments
      description: Drops comments.
      publisher: example.com
      versions:
        - name: v1
          runtime:
            starlark:
              uri: %s/script.star
              sha256: %s
`, srv.URL, binPath, binSHA, srv.URL, digest.FromBytes(script).Encoded())
	}
	binSHA := digest.FromBytes(bin).Encoded()
	const (
		binURI  = "/spec/krmFunctions/0/versions/0/runtime/exec/platforms/0/uri"
		binSum  = "/spec/krmFunctions/0/versions/0/runtime/exec/platforms/0/sha256"
		starURI = "/spec/krmFunctions/1/versions/0/runtime/starlark/uri"
	)
	keys := []sign.PublicKey{signtest.KeyPair(t, "k.pub").Public}
	tests := []struct {
		name         string
		binPath, sha string
		opts         gate.Options
		errors       []string // "pointer: message fragment"
		warnings     []string
		checked      int
		skipped      map[string]int
		fetches      int // of /bin
	}{
		{name: "both match", binPath: "/bin", sha: binSHA, checked: 2, fetches: 1},
		{name: "the binary differs from the recorded sha256", binPath: "/bin", sha: strings.Repeat("a", 64), checked: 2, fetches: 1,
			errors: []string{binSum + ": the document records sha256 " + strings.Repeat("a", 64) + ", but " + srv.URL + "/bin holds " + binSHA}},
		{name: "not found", binPath: "/nothing", sha: binSHA, checked: 2,
			errors: []string{binURI + ": fetch " + srv.URL + "/nothing: 404 Not Found"}},
		{name: "larger than MaxSize, declared", binPath: "/big", sha: binSHA, opts: gate.Options{MaxSize: 1024}, checked: 2,
			errors: []string{binURI + ": fetch " + srv.URL + "/big: 4096 bytes, more than --max-size (1024 bytes)"}},
		{name: "larger than MaxSize, streamed", binPath: "/big-chunked", sha: binSHA, opts: gate.Options{MaxSize: 1024}, checked: 2,
			errors: []string{binURI + ": fetch " + srv.URL + "/big-chunked: more than --max-size (1024 bytes)"}},
		{name: "signatures required: both fail, nothing fetched", binPath: "/bin", sha: binSHA, opts: gate.Options{Keys: keys, RequireSignatures: true}, checked: 2,
			errors: []string{
				binURI + ": " + srv.URL + "/bin is fetched over https, which cannot carry a signature: publish it as an OCI artifact (krm-catalog push --type exec) and name it by oci:// so that it can be signed",
				starURI + ": " + srv.URL + "/script.star is fetched over https, which cannot carry a signature: publish it as an OCI artifact (krm-catalog push --type starlark)",
			}},
		{name: "keys without requiring signatures: warnings, and the sha256 checked", binPath: "/bin", sha: binSHA, opts: gate.Options{Keys: keys}, checked: 2, fetches: 1,
			warnings: []string{binURI + ": " + srv.URL + "/bin is fetched over https, which cannot carry a signature", starURI + ": " + srv.URL + "/script.star is fetched"}},
		{name: "offline: skipped, and counted", binPath: "/bin", sha: strings.Repeat("a", 64), opts: gate.Options{Offline: true}, skipped: map[string]int{gate.SkippedOffline: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits.Clear()
			path := filepath.Join(t.TempDir(), "catalog.yaml")
			if err := os.WriteFile(path, []byte(doc(tc.binPath, tc.sha)), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := tc.opts
			opts.HTTPClient = srv.Client()
			g, err := gate.New(nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := g.Run(context.Background(), []string{path}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for sev, want := range map[catalog.Severity][]string{catalog.SeverityError: tc.errors, catalog.SeverityWarning: tc.warnings} {
				got := errorsAt(rep.Findings(), sev)
				if len(got) != len(want) {
					t.Fatalf("%s findings:\n%s\nwant %d matching %q", sev, strings.Join(got, "\n"), len(want), want)
				}
				for i := range got {
					if !strings.HasPrefix(got[i], want[i]) {
						t.Errorf("%s %d = %q, want it to start with %q", sev, i, got[i], want[i])
					}
				}
			}
			s := rep.Summarize()
			if s.Artifacts != tc.checked || !cmp.Equal(s.Skipped, tc.skipped, cmpopts.EquateEmpty()) {
				t.Errorf("summary %q: %d checked, skipped %v; want %d, %v", s, s.Artifacts, s.Skipped, tc.checked, tc.skipped)
			}
			fetches := 0
			if n, ok := hits.Load("/bin"); ok {
				fetches = int(n.(*atomic.Int32).Load())
			}
			if fetches != tc.fetches {
				t.Errorf("/bin fetched %d times, want %d", fetches, tc.fetches)
			}
		})
	}
}

func TestReportFormats(t *testing.T) {
	t.Parallel()
	f := newFixture(t, registrytest.Distribution(t))
	rep := f.run(t, gate.Options{RequirePinned: true}, f.catalog(t, map[string]string{"{{LINUX_SHA}}": strings.Repeat("c", 64), "\n              sha256: {{IMAGE_SHA}}": "\n              colour: blue"}))
	if !rep.Findings().HasErrors() {
		t.Fatal("the fixture should have errors")
	}
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range gate.Formats() {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			if err := rep.Write(&out, format); err != nil {
				t.Fatal(err)
			}
			switch format {
			case "results":
				docs, fs := v.Validate("results.yaml", out.Bytes(), catalog.Options{})
				if len(fs) != 0 || len(docs) != 1 || docs[0].Kind != catalog.KindResourceList {
					t.Fatalf("results output does not validate as a ResourceList: %v\n%s", fs, out.String())
				}
				results, _ := docs[0].Value["results"].([]any)
				if len(results) != len(rep.Findings()) {
					t.Errorf("%d results for %d findings", len(results), len(rep.Findings()))
				}
				if !strings.Contains(out.String(), "path: spec.krmFunctions[0].versions[0].runtime.exec.platforms[0].sha256") {
					t.Errorf("results lack the field path of the sha256 error:\n%s", out.String())
				}
			case "junit":
				var suites struct {
					Tests    int `xml:"tests,attr"`
					Failures int `xml:"failures,attr"`
				}
				if err := xml.Unmarshal(out.Bytes(), &suites); err != nil {
					t.Fatalf("junit is not XML: %v\n%s", err, out.String())
				}
				if suites.Tests != 6 || suites.Failures != 2 {
					t.Errorf("junit: %d tests, %d failures; want 6 (a document and 5 artifacts) and 2 (the image pin, the sha256)\n%s", suites.Tests, suites.Failures, out.String())
				}
			case "json":
				var got struct {
					Findings  []catalog.Finding
					Artifacts []gate.Check
					Summary   gate.Summary
				}
				if err := json.Unmarshal(out.Bytes(), &got); err != nil {
					t.Fatal(err)
				}
				if len(got.Artifacts) != 5 || got.Summary.Errors != rep.Findings().Count(catalog.SeverityError) || got.Summary.Failed != 1 {
					t.Errorf("json summary %+v with %d artifacts", got.Summary, len(got.Artifacts))
				}
			case "text":
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				if len(lines) != len(rep.Findings()) {
					t.Errorf("%d text lines for %d findings", len(lines), len(rep.Findings()))
				}
			}
		})
	}
	if err := rep.Write(&bytes.Buffer{}, "xml"); err == nil {
		t.Error("an unknown format was accepted")
	}
	_ = fmt.Sprint()
}
