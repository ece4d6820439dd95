// Skipping a step that would change nothing. A function whose definition
// says `idempotent: true` promises that running it again on its own output changes nothing. So,
// for each (runtime digest, functionConfig digest), the output digest of its last successful run
// is remembered in the cache; when a later run's input to that step has exactly that digest, the
// step is skipped and its input passed on as its output.
//
// The hook is skipStore.hook, called by Build where a pipeline step is built from a resolved
// function: it wraps the step's Function when the resolved version is idempotent, its runtime is
// pinned by digest, and skipping is not turned off (--no-skip). Nothing else in the pipeline
// changes. docs/skip.md has the rules.

package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/runtime/exec"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// SkippedMessage is the info result a skipped step reports.
const SkippedMessage = "skipped: the input is the output of an earlier run with this runtime and config, and the function is idempotent (--no-skip runs it)"

// skipStore remembers output digests under a directory of the cache, one small file per step key.
type skipStore struct {
	dir string
}

// openSkipStore returns the store under dir (created on first write); "" gives a store that remembers
// nothing.
func openSkipStore(dir string) *skipStore { return &skipStore{dir: dir} }

// skipKey names a step: the digest of what runs and the digest of its functionConfig (canonical
// JSON, so comments and field order do not matter). pin must be the digest of the runtime's bytes
// (an image or artifact digest, an executable's or script's sha256); without one there is no key.
func skipKey(pin string, config *yaml.RNode) (string, error) {
	if pin == "" {
		return "", errors.New("skip: the runtime has no digest")
	}
	h := sha256.New()
	h.Write([]byte(pin))
	h.Write([]byte{0})
	if config != nil {
		c, err := canonical(config.YNode(), false)
		if err != nil {
			return "", fmt.Errorf("skip: functionConfig: %w", err)
		}
		h.Write(c)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// itemsDigest is the digest of a list of resources as the next step would see them: each resource as
// canonical JSON (comments, field order and styles ignored), without the annotations a pipeline
// adds to track resources (ids, indexes), keeping the file path; in any order.
func itemsDigest(items []*yaml.RNode) (string, error) {
	sums := make([][sha256.Size]byte, 0, len(items))
	w := canonicalWriter{b: new(bytes.Buffer)} // one buffer and one stack for every item
	for _, it := range items {
		w.b.Reset()
		if err := w.write(it.YNode(), atResource, 0); err != nil {
			return "", err
		}
		sums = append(sums, sha256.Sum256(w.b.Bytes()))
	}
	// sorted as their hex spellings sort, which are hashed
	slices.SortFunc(sums, func(a, b [sha256.Size]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	var hexSum [2 * sha256.Size]byte
	for _, s := range sums {
		hex.Encode(hexSum[:], s[:])
		h.Write(hexSum[:])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// trackingAnnotations are the annotations a pipeline sets to follow resources through a function;
// they say nothing about the resource and may be renumbered between runs.
var trackingAnnotations = []string{
	kioutil.IdAnnotation, kioutil.LegacyIdAnnotation, kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation,
	kioutil.SeqIndentAnnotation,
}

// canonical writes n in a form that ignores comments, styles and key order: scalars as their
// resolved tag and value, mappings sorted by key. For a resource, the tracking annotations are
// left out and the path has one spelling. It walks the nodes: decoding into Go values first costs
// about three times as much, and this digest is what a skipped step pays.
func canonical(n *yaml.Node, resource bool) ([]byte, error) {
	w := canonicalWriter{b: new(bytes.Buffer)}
	where := elsewhere
	if resource {
		where = atResource
	}
	if err := w.write(n, where, 0); err != nil {
		return nil, err
	}
	return w.b.Bytes(), nil
}

// Where the walk is in a resource: the annotations are read differently.
const (
	elsewhere = iota
	atResource
	atMetadata
	atAnnotations
)

// maxCanonicalDepth bounds the walk: aliases can make a document refer to itself.
const maxCanonicalDepth = 1000

// canonicalWriter writes canonical forms into b; the key-value pairs of the mappings being written
// share one stack, rather than a slice allocated for each mapping.
type canonicalWriter struct {
	b     *bytes.Buffer
	pairs []canonicalPair
}

type canonicalPair struct{ k, v *yaml.Node }

func (w *canonicalWriter) write(n *yaml.Node, where, depth int) error {
	if depth > maxCanonicalDepth {
		return errors.New("skip: the document nests too deep")
	}
	b := w.b
	if n == nil {
		b.WriteString("~;")
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := w.write(c, where, depth+1); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		return w.write(n.Alias, where, depth+1)
	case yaml.ScalarNode:
		// tag:len:value; written piece by piece: fmt cost half of the whole walk
		b.WriteString(n.ShortTag())
		b.WriteByte(':')
		b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(len(n.Value)), 10))
		b.WriteByte(':')
		b.WriteString(n.Value)
		b.WriteByte(';')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for _, c := range n.Content {
			if err := w.write(c, elsewhere, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.MappingNode:
		mark := len(w.pairs)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if where == atAnnotations {
				if slices.Contains(trackingAnnotations, k.Value) {
					continue
				}
				if k.Value == kioutil.LegacyPathAnnotation {
					k = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kioutil.PathAnnotation}
				}
			}
			w.pairs = append(w.pairs, canonicalPair{k, v})
		}
		end := len(w.pairs)
		slices.SortStableFunc(w.pairs[mark:end], func(a, c canonicalPair) int { return strings.Compare(a.k.Value, c.k.Value) })
		b.WriteByte('{')
		for i := mark; i < end; i++ {
			p := w.pairs[i] // the stack may move while the value is written
			next := elsewhere
			if where == atResource && p.k.Value == "metadata" {
				next = atMetadata
			} else if where == atMetadata && p.k.Value == "annotations" {
				next = atAnnotations
			}
			b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(len(p.k.Value)), 10))
			b.WriteByte(':')
			b.WriteString(p.k.Value)
			b.WriteByte('=')
			if err := w.write(p.v, next, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		w.pairs = w.pairs[:mark] // an error leaves the stack as it is: the walk stops there
	}
	return nil
}

func (s *skipStore) path(key string) string { return filepath.Join(s.dir, key[:2], key) }

// output returns the remembered output digest of key and the digest of its resources' identities
// ("" when there is none; ids is "" in a record written without it).
func (s *skipStore) output(key string) (digest, ids string) {
	if s.dir == "" {
		return "", ""
	}
	b, err := os.ReadFile(s.path(key))
	if err != nil {
		return "", ""
	}
	digest, ids, _ = strings.Cut(strings.TrimSpace(string(b)), " ")
	return digest, ids
}

// identitiesDigest is the digest of the apiVersion, kind, namespace and name of each resource, in
// any order. Lists with the same itemsDigest have the same identities, and reading four fields
// costs a fraction of the canonical walk: an input whose identities differ from those of the
// remembered output is not that output, and its whole digest is not computed.
func identitiesDigest(items []*yaml.RNode) string {
	ids := make([]string, 0, len(items))
	var b strings.Builder
	for _, it := range items {
		b.Reset()
		n := it.YNode()
		meta := field(n, "metadata")
		for _, v := range []*yaml.Node{field(n, "apiVersion"), field(n, "kind"), field(meta, "namespace"), field(meta, "name")} {
			if v != nil && v.Kind == yaml.ScalarNode {
				b.WriteString(strconv.Itoa(len(v.Value)))
				b.WriteByte(':')
				b.WriteString(v.Value)
			}
			b.WriteByte(';')
		}
		ids = append(ids, b.String())
	}
	slices.Sort(ids)
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// field is the value of key k in the mapping m (an alias followed), nil when there is none.
func field(m *yaml.Node, k string) *yaml.Node {
	if m != nil && m.Kind == yaml.AliasNode {
		m = m.Alias
	}
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var v *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			v = m.Content[i+1] // the last one, as the canonical form's sort keeps it last
		}
	}
	if v != nil && v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	return v
}

// remember records the output digest of key and its identities' digest. The file is replaced atomically: concurrent runs
// write the same value or one of two valid ones.
func (s *skipStore) remember(key, output, ids string) error {
	if s.dir == "" {
		return nil
	}
	p := s.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".skip-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(output + " " + ids + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// wrap returns f, skipping when the input's digest is the remembered output of key, and
// remembering the output of every successful run without error results.
func (s *skipStore) wrap(f fn.Function, key string) fn.Function {
	return &skipping{f: f, key: key, store: s}
}

type skipping struct {
	f     fn.Function
	key   string
	store *skipStore
}

func (w *skipping) Run(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	remembered, ids := w.store.output(w.key)
	if want := remembered; want != "" && (ids == "" || identitiesDigest(in.Items) == ids) {
		if got, err := itemsDigest(in.Items); err == nil && got == want {
			return &fn.ResourceList{Items: in.Items, FunctionConfig: in.FunctionConfig,
				Results: []fn.Result{{Message: SkippedMessage, Severity: fn.SeverityInfo}}}, nil
		}
	}
	out, err := w.f.Run(ctx, in)
	if err != nil || out == nil || hasErrorResult(out.Results) {
		return out, err
	}
	if d, derr := itemsDigest(out.Items); derr == nil && d != remembered {
		// remembering is an optimisation: a cache that cannot be written costs the next run time only
		_ = w.store.remember(w.key, d, identitiesDigest(out.Items))
	}
	return out, nil
}

func hasErrorResult(rs []fn.Result) bool {
	return slices.ContainsFunc(rs, fn.Result.IsError)
}

// runtimeDigest is the digest that pins the runtime kind ("container", "exec" or "starlark") of
// v: the image digest, this platform's executable sha256, the script's sha256 or artifact digest.
// "" when that runtime is not pinned.
func runtimeDigest(v catalog.Version, kind, goos, goarch string) string {
	rt := v.Runtime
	switch kind {
	case "container":
		if rt.Container != nil {
			if _, d, ok := strings.Cut(rt.Container.PinnedImage(), "@"); ok {
				return d
			}
		}
	case "exec":
		if rt.Exec != nil {
			if p, ok := rt.Exec.Platform(goos, goarch); ok && p.SHA256 != "" {
				return "sha256:" + p.SHA256
			}
		}
	case "starlark":
		if s := rt.Starlark; s != nil {
			if s.SHA256 != "" {
				return "sha256:" + s.SHA256
			}
			if _, d, ok := strings.Cut(s.Source(), "@"); ok {
				return d
			}
		}
	}
	return ""
}

// hook is the one call a pipeline makes where it builds a step from a function version: f
// wrapped when v says idempotent: true and its runtime kind is pinned, else f itself.
func (s *skipStore) hook(f fn.Function, v catalog.Version, kind string, config *yaml.RNode) fn.Function {
	if v.Idempotent == nil || !*v.Idempotent {
		return f
	}
	key, err := skipKey(runtimeDigest(v, kind, runtime.GOOS, runtime.GOARCH), config)
	if err != nil {
		return f
	}
	return s.wrap(f, key)
}

// renderPin is Checked.Pin for a catalog function run with runtime kind: "" unless the version
// says idempotent: true, its runtime is pinned by digest, and it is not granted what lies outside
// its input (the network, a storage mount).
func (r *Runner) renderPin(res *resolver.Resolution, kind string) string {
	v := res.Version
	if v.Idempotent == nil || !*v.Idempotent {
		return ""
	}
	digest := runtimeDigest(v, kind, runtime.GOOS, runtime.GOARCH)
	if digest == "" {
		return ""
	}
	if c := v.Runtime.Container; kind == "container" && c != nil && (c.RequireNetwork && r.o.AllowNetwork || c.RequireStorageMount && len(r.o.Mounts) > 0) {
		return ""
	}
	def, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	env := r.o.Env
	if kind == "exec" {
		// the locale changes a function's messages, which the render status records
		env = append(exec.Inherited(), env...)
	}
	h := sha256.New()
	for _, part := range []string{res.Function.Group, res.Function.Kind, kind, digest, string(def), r.wire(res).String(), strings.Join(env, "\x00")} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
