package kpt

// Pinning a package's by-kind steps: kpt runs a step only by its image (or an executable), so a
// step that names only its config's kind renders under krm-catalog and nowhere else until the
// image the trusted catalogs resolve it to is written into the Kptfile.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/internal/atomicfile"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// PinnedStep is what PinImages did with one by-kind step.
type PinnedStep struct {
	// Kptfile is the file, Step the step as messages name it (Function.Label).
	Kptfile, Step string
	// Image is what was written: the catalog's image with its digest. "" when nothing was.
	Image string
	// Problem says why the step was left as it is (its function lists no container image), or,
	// with Image set, what kpt will still lack (no digest in the catalog).
	Problem string
}

// PinImages writes into the Kptfiles of the package at dir, subpackages included, the image of
// each step that names only a configPath (its config's apiVersion and kind resolved through r, as
// render resolves them, to the version the catalog lists): image@sha256 first in the step, one
// line added, every other byte of the file kept (fn.InsertScalar). A step whose function lists no
// container image is left as it is and reported, not an error: the package still renders with
// krm-catalog, and the report names each step kpt cannot run. A config that names its runtime
// itself is not a by-kind step and is left alone. Any other failure (a config that cannot be
// read, a function no catalog lists, a file that cannot be edited in place) is an error and no
// file is written.
func PinImages(ctx context.Context, r *resolver.Resolver, dir string) ([]PinnedStep, error) {
	root, err := findPackages(fn.PackageRoot(dir))
	if err != nil {
		return nil, fmt.Errorf("pin images: %w", err)
	}
	type write struct {
		path string
		data []byte
	}
	var (
		steps  []PinnedStep
		writes []write
	)
	for _, n := range root.walk(nil) {
		path := filepath.Join(n.dir, KptfileName)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("pin images: %w", err)
		}
		edited := data
		for _, list := range []struct {
			name  string
			steps []Function
		}{{"mutators", n.kf.Pipeline.Mutators}, {"validators", n.kf.Pipeline.Validators}} {
			for i, f := range list.steps {
				if f.Image != "" || f.Exec != "" || f.ConfigPath == "" {
					continue
				}
				s, err := pinStep(ctx, r, n, f)
				if err != nil {
					return nil, fmt.Errorf("pin images: %s: %s: %w", path, f.Label(), err)
				}
				if s == nil {
					continue
				}
				s.Kptfile = path
				steps = append(steps, *s)
				if s.Image == "" {
					continue
				}
				edited, err = fn.InsertScalar(edited, fn.ScalarEdit{Path: []string{"pipeline", list.name, strconv.Itoa(i)}, Value: s.Image}, "image")
				if err != nil {
					return nil, fmt.Errorf("pin images: %s: %s: %w", path, f.Label(), err)
				}
			}
		}
		if len(edited) != len(data) {
			writes = append(writes, write{path, edited})
		}
	}
	for _, w := range writes {
		if err := atomicfile.WriteFile(w.path, w.data, 0o644); err != nil {
			return steps, fmt.Errorf("pin images: %w", err)
		}
	}
	return steps, nil
}

// pinStep resolves one by-kind step to its image; nil when its config names its own runtime.
func pinStep(ctx context.Context, r *resolver.Resolver, n *node, f Function) (*PinnedStep, error) {
	data, err := os.ReadFile(filepath.Join(n.dir, filepath.FromSlash(f.ConfigPath)))
	if err != nil {
		return nil, fmt.Errorf("configPath: %w", err)
	}
	cfg, err := yaml.Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("configPath %s: %w", f.ConfigPath, err)
	}
	res, err := r.Resolve(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if res.Explicit != nil {
		return nil, nil
	}
	s := &PinnedStep{Step: f.Label()}
	what := fmt.Sprintf("%s %s %s of catalog %s", res.APIVersion, res.Kind, res.Version.Name, res.Catalog)
	c := res.Version.Runtime.Container
	if c == nil {
		s.Problem = what + " lists no container image: kpt cannot run this step; left as it is"
		return s, nil
	}
	s.Image = c.PinnedImage()
	if c.Digest() == "" {
		s.Problem = what + " lists its image without a digest: pinned by tag only"
	}
	return s, nil
}
