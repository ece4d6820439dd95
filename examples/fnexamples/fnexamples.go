// Package fnexamples builds the example functions of examples/functions reproducibly and writes a
// KRMFunctionCatalog for them whose exec runtimes point at a base URL. The example catalog in the
// repository, the development server that serves it (examples/functions/serve) and the end-to-end
// tests all come from here, so that the sha256 digests in the catalog are those of what is built.
package fnexamples

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/template"
)

// Function is one example function.
type Function struct {
	// Name is the directory under examples/functions and the executable's name.
	Name string
	// Kind is the functionConfig kind; the group is Group and the version v1.
	Kind string
	// SpecV2 says the function serves spec v2 (all of them do, through pkg/krmfn).
	SpecV2 bool
}

// Group is the API group of the example functions.
const Group = "fn.example.com"

// Functions are the Go example functions.
func Functions() []Function {
	return []Function{
		{Name: "set-namespace", Kind: "SetNamespace", SpecV2: true},
		{Name: "set-labels", Kind: "SetLabels", SpecV2: true},
		{Name: "require-limits", Kind: "RequireResourceLimits", SpecV2: true},
	}
}

// ExampleImages are the container image names the example catalog lists for the Go functions, by
// function name. No registry serves them: they name the functions for what resolves by image
// (`krm-catalog fn serve`, Porch), which runs the catalog's verified executable instead.
func ExampleImages() map[string]string {
	images := map[string]string{}
	for _, f := range Functions() {
		images[f.Name] = "registry.example.com/krm-fn/" + f.Name + ":v1"
	}
	return images
}

// StarlarkScript is the example starlark function, served beside the executables.
const StarlarkScript = "set-annotations.star"

// Platforms are the platforms the example catalog lists.
func Platforms() []Platform { return []Platform{{"linux", "amd64"}, {"linux", "arm64"}} }

// Platform is an os/arch pair.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Current is the platform this process runs on.
func Current() Platform { return Platform{runtime.GOOS, runtime.GOARCH} }

// ModuleRoot finds the repository root (the directory of go.mod) from the working directory.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the krm-catalog module")
	}
	return filepath.Dir(mod), nil
}

// Build builds the example functions for a platform into dir/<os>-<arch>/<name>: static
// (CGO_ENABLED=0), without paths, build ids or VCS stamps, so that the same toolchain and sources
// always give the same bytes. It returns the paths by function name.
func Build(ctx context.Context, root, dir string, p Platform) (map[string]string, error) {
	out := filepath.Join(dir, p.OS+"-"+p.Arch)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", out + string(os.PathSeparator)}
	paths := map[string]string{}
	for _, f := range Functions() {
		args = append(args, "./examples/functions/"+f.Name)
		paths[f.Name] = filepath.Join(out, f.Name)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the example functions for %s: %v\n%s", p, err, msg)
	}
	return paths, nil
}

// BuildCommand builds ./cmd/krm-catalog into dir, statically, and returns its path.
func BuildCommand(ctx context.Context, root, dir string, ldflags string) (string, error) {
	out := filepath.Join(dir, "krm-catalog")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags="+ldflags, "-o", out, "./cmd/krm-catalog")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build krm-catalog: %v\n%s", err, msg)
	}
	return out, nil
}

// FileSHA256 is the hex sha256 of a file.
func FileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// Exec is where a catalog says one function's executable for one platform is.
type Exec struct {
	Platform Platform
	URI      string
	SHA256   string
}

// CatalogInput is what the generated catalog lists.
type CatalogInput struct {
	Name string
	// Exec lists the executables of each function by name.
	Exec map[string][]Exec
	// Images gives functions by name a container image too (repository:tag@digest), so that
	// they can be found by image; the executables still run where the runtime is chosen so.
	Images map[string]string
	// StarlarkURI and StarlarkSHA256 locate the starlark example; empty leaves it out.
	StarlarkURI, StarlarkSHA256 string
	// Header is a comment written at the top.
	Header string
}

var catalogTemplate = template.Must(template.New("catalog").Parse(`{{.Header}}apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: {{.Name}}
spec:
  krmFunctions:
    - group: fn.example.com
      names:
        kind: SetNamespace
      description: Sets metadata.namespace on every namespaced resource, and the namespace of ServiceAccount subjects in role bindings.
      publisher: example.com
      tags: [mutator, namespace]
      versions:
        - name: v1
          schema:
            openAPIV3Schema:
              type: object
              required: [namespace]
              properties:
                namespace:
                  type: string
                  description: The namespace to move resources into.
                  pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
                  maxLength: 63
                  example: shop
          idempotent: true
          runtime:
{{- with index .Images "set-namespace"}}
            container:
              image: {{.}}
{{- end}}
            exec:
              platforms:
{{- range index .Exec "set-namespace"}}
                - bin: set-namespace
                  os: {{.Platform.OS}}
                  arch: {{.Platform.Arch}}
                  uri: {{.URI}}
                  sha256: {{.SHA256}}
{{- end}}
          usage: https://krm-functions.example.com/set-namespace/v1/README.md
          examples:
            - https://krm-functions.example.com/set-namespace/v1/examples/basic/README.md
          license: Apache-2.0
          conformWithSpecVersions: [v1, v2]
    - group: fn.example.com
      names:
        kind: SetLabels
      description: Adds labels to every resource.
      publisher: example.com
      tags: [mutator, labels]
      versions:
        - name: v1
          schema:
            openAPIV3Schema:
              type: object
              required: [labels]
              properties:
                labels:
                  type: object
                  minProperties: 1
                  example: {app: shop}
                  additionalProperties:
                    type: string
                    maxLength: 63
          idempotent: true
          runtime:
{{- with index .Images "set-labels"}}
            container:
              image: {{.}}
{{- end}}
            exec:
              platforms:
{{- range index .Exec "set-labels"}}
                - bin: set-labels
                  os: {{.Platform.OS}}
                  arch: {{.Platform.Arch}}
                  uri: {{.URI}}
                  sha256: {{.SHA256}}
{{- end}}
          usage: https://krm-functions.example.com/set-labels/v1/README.md
          examples:
            - https://krm-functions.example.com/set-labels/v1/examples/basic/README.md
          license: Apache-2.0
          conformWithSpecVersions: [v1, v2]
    - group: fn.example.com
      names:
        kind: RequireResourceLimits
      description: Validates that every container and init container of a workload declares resource limits.
      publisher: example.com
      tags: [validator, resources]
      versions:
        - name: v1
          schema:
            openAPIV3Schema:
              type: object
              properties:
                require:
                  type: array
                  items:
                    type: string
                    enum: [cpu, memory, ephemeral-storage]
          idempotent: true
          runtime:
{{- with index .Images "require-limits"}}
            container:
              image: {{.}}
{{- end}}
            exec:
              platforms:
{{- range index .Exec "require-limits"}}
                - bin: require-limits
                  os: {{.Platform.OS}}
                  arch: {{.Platform.Arch}}
                  uri: {{.URI}}
                  sha256: {{.SHA256}}
{{- end}}
          usage: https://krm-functions.example.com/require-limits/v1/README.md
          examples:
            - https://krm-functions.example.com/require-limits/v1/examples/basic/README.md
          license: Apache-2.0
          conformWithSpecVersions: [v1, v2]
{{- if .StarlarkURI}}
    - group: fn.example.com
      names:
        kind: SetAnnotations
      description: Adds annotations to every resource; a starlark script, run in-process.
      publisher: example.com
      tags: [mutator, annotations, starlark]
      versions:
        - name: v1
          schema:
            openAPIV3Schema:
              type: object
              required: [annotations]
              properties:
                annotations:
                  type: object
                  additionalProperties:
                    type: string
          idempotent: true
          runtime:
            starlark:
              uri: {{.StarlarkURI}}
              sha256: {{.StarlarkSHA256}}
          usage: https://krm-functions.example.com/set-annotations/v1/README.md
          examples:
            - https://krm-functions.example.com/set-annotations/v1/examples/basic/README.md
          license: Apache-2.0
{{- end}}
`))

// Catalog renders the example catalog.
func Catalog(in CatalogInput) ([]byte, error) {
	var b bytes.Buffer
	if err := catalogTemplate.Execute(&b, in); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Published builds the examples for the platforms under dir and returns the catalog input that
// serves them from baseURL (http://host:port or https://host:port), the file paths by URL path, and the starlark script.
func Published(ctx context.Context, root, dir, baseURL string, platforms []Platform) (CatalogInput, map[string]string, error) {
	in := CatalogInput{Name: "example-functions", Exec: map[string][]Exec{}}
	files := map[string]string{}
	for _, p := range platforms {
		paths, err := Build(ctx, root, dir, p)
		if err != nil {
			return in, nil, err
		}
		for _, f := range Functions() {
			sum, err := FileSHA256(paths[f.Name])
			if err != nil {
				return in, nil, err
			}
			urlPath := fmt.Sprintf("/%s/%s-%s/%s", f.Name, p.OS, p.Arch, f.Name)
			files[urlPath] = paths[f.Name]
			in.Exec[f.Name] = append(in.Exec[f.Name], Exec{Platform: p, URI: baseURL + urlPath, SHA256: sum})
		}
	}
	script := filepath.Join(root, "examples", "functions", StarlarkScript)
	sum, err := FileSHA256(script)
	if err != nil {
		return in, nil, err
	}
	files["/"+StarlarkScript] = script
	in.StarlarkURI, in.StarlarkSHA256 = baseURL+"/"+StarlarkScript, sum
	return in, files, nil
}
