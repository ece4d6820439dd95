package starlark

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	starjson "go.starlark.net/lib/json"
	starmath "go.starlark.net/lib/math"
	startime "go.starlark.net/lib/time"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	yaml2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// kpt's starlark function offers the modules of github.com/qri-io/starlib and its own krmfn to
// load(). All of them are offered here, under kpt's names: coreModules, docModules' csv and
// zipfile, htmlModules' bsoup and html, geoModules' geo, and netModules' http and xlsx, whose
// calls reach the network only when n allows it (docs/runtimes.md).
func modules(n netAccess) map[string]starlark.StringDict {
	mods := coreModules()
	for _, more := range []map[string]starlark.StringDict{docModules(), htmlModules(), geoModules(), netModules(n)} {
		for name, m := range more {
			mods[name] = m
		}
	}
	return mods
}

func coreModules() map[string]starlark.StringDict {
	json := &starlarkstruct.Module{Name: "json", Members: starlark.StringDict{
		"encode": starjson.Module.Members["encode"],
		"decode": starjson.Module.Members["decode"],
		"indent": starjson.Module.Members["indent"],
		// starlib's names
		"dumps": starjson.Module.Members["encode"],
		"loads": starjson.Module.Members["decode"],
	}}
	return map[string]starlark.StringDict{
		"encoding/json.star":   {"json": json},
		"encoding/yaml.star":   {"yaml": &starlarkstruct.Module{Name: "yaml", Members: starlark.StringDict{"dumps": starlark.NewBuiltin("dumps", yamlDumps), "loads": starlark.NewBuiltin("loads", yamlLoads)}}},
		"encoding/base64.star": {"base64": &starlarkstruct.Module{Name: "base64", Members: starlark.StringDict{"encode": starlark.NewBuiltin("encode", base64Encode), "decode": starlark.NewBuiltin("decode", base64Decode)}}},
		"hash.star": {"hash": &starlarkstruct.Module{Name: "hash", Members: starlark.StringDict{
			"md5":    hashBuiltin("md5", func(b []byte) []byte { s := md5.Sum(b); return s[:] }),
			"sha1":   hashBuiltin("sha1", func(b []byte) []byte { s := sha1.Sum(b); return s[:] }),
			"sha256": hashBuiltin("sha256", func(b []byte) []byte { s := sha256.Sum256(b); return s[:] }),
		}}},
		"re.star": {"re": &starlarkstruct.Module{Name: "re", Members: starlark.StringDict{
			"findall": starlark.NewBuiltin("findall", reFindall),
			"match":   starlark.NewBuiltin("match", reMatch),
			"search":  starlark.NewBuiltin("search", reMatch),
			"split":   starlark.NewBuiltin("split", reSplit),
			"sub":     starlark.NewBuiltin("sub", reSub),
		}}},
		"math.star": {"math": starmath.Module},
		"time.star": {"time": startime.Module},
		"krmfn.star": {"krmfn": &starlarkstruct.Module{Name: "krmfn", Members: starlark.StringDict{
			"match_gvk":       starlark.NewBuiltin("match_gvk", matchGVK),
			"match_name":      starlark.NewBuiltin("match_name", matchField("match_name", "name")),
			"match_namespace": starlark.NewBuiltin("match_namespace", matchField("match_namespace", "namespace")),
		}}},
	}
}

// load serves load() from modules; anything else is an error naming what is offered.
func load(mods map[string]starlark.StringDict) func(*starlark.Thread, string) (starlark.StringDict, error) {
	return func(_ *starlark.Thread, module string) (starlark.StringDict, error) {
		if m, ok := mods[module]; ok {
			return m, nil
		}
		names := make([]string, 0, len(mods))
		for k := range mods {
			names = append(names, k)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("module %q is not available; the modules are %v", module, names)
	}
}

// yamlDumps is starlib's yaml.dumps, as kpt's starlark function offers it: the value turned into Go
// values as starlib turns it (util.Unmarshal) and written by yaml.v2's Marshal, so that what it
// writes is kpt's byte for byte: YAML 1.1 look-alikes quoted ("yes", "12:30", "y" as a key), a
// float of no fraction written 6, long strings folded at 80 columns.
func yamlDumps(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var v starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "obj", &v); err != nil {
		return nil, err
	}
	g, err := toGo(v, 0)
	if err != nil {
		return nil, err
	}
	out, err := yaml2.Marshal(g)
	if err != nil {
		return nil, err
	}
	return starlark.String(out), nil
}

// toGo is starlib's util.Unmarshal, bounded in depth: None, bools, ints (64-bit), floats, strings
// and times as their Go values, lists and tuples as slices, a dict as a map keyed by string (or by
// any value, when a key is not a string); a set or anything else is an error, as there.
func toGo(v starlark.Value, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("value nested too deeply")
	}
	switch t := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(t), nil
	case starlark.Int:
		var i int
		if err := starlark.AsInt(t, &i); err != nil {
			return nil, err
		}
		return i, nil
	case starlark.Float:
		return float64(t), nil
	case starlark.String:
		return string(t), nil
	case startime.Time:
		return time.Time(t), nil
	case *starlark.Dict:
		items := t.Items()
		keys, vals := make([]any, len(items)), make([]any, len(items))
		anyKey := false
		for i, kv := range items {
			val, err := toGo(kv[1], depth+1)
			if err != nil {
				return nil, fmt.Errorf("unmarshaling starlark value: %w", err)
			}
			key, err := toGo(kv[0], depth+1)
			if err != nil {
				return nil, fmt.Errorf("unmarshaling starlark key: %w", err)
			}
			if _, ok := key.(string); !ok {
				anyKey = true
			}
			keys[i], vals[i] = key, val
		}
		if anyKey {
			m := make(map[any]any, len(keys))
			for i, k := range keys {
				m[k] = vals[i]
			}
			return m, nil
		}
		m := make(map[string]any, len(keys))
		for i, k := range keys {
			m[k.(string)] = vals[i]
		}
		return m, nil
	case *starlark.List, starlark.Tuple:
		seq := t.(starlark.Indexable)
		out := make([]any, seq.Len())
		for i := range out {
			e, err := toGo(seq.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case *starlark.Set:
		return nil, errors.New("sets aren't yet supported")
	}
	return nil, fmt.Errorf("unrecognized starlark type: %s", v.Type())
}

func yamlLoads(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var src string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "source", &src); err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		return nil, err
	}
	return toStarlark(&n, 0)
}

func base64Encoding(name string) (*base64.Encoding, error) {
	switch name {
	case "standard":
		return base64.StdEncoding, nil
	case "standard_raw":
		return base64.RawStdEncoding, nil
	case "url":
		return base64.URLEncoding, nil
	case "url_raw":
		return base64.RawURLEncoding, nil
	}
	return nil, fmt.Errorf("unknown encoding %q: standard, standard_raw, url or url_raw", name)
}

func base64Encode(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return base64Call(b, args, kwargs, func(e *base64.Encoding, src string) (string, error) {
		return e.EncodeToString([]byte(src)), nil
	})
}

func base64Decode(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return base64Call(b, args, kwargs, func(e *base64.Encoding, src string) (string, error) {
		out, err := e.DecodeString(src)
		return string(out), err
	})
}

// base64Call unpacks (src, encoding="standard") as starlib's base64 functions take them.
func base64Call(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple, do func(*base64.Encoding, string) (string, error)) (starlark.Value, error) {
	src, enc := "", "standard"
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "src", &src, "encoding?", &enc); err != nil {
		return nil, err
	}
	e, err := base64Encoding(enc)
	if err != nil {
		return nil, err
	}
	out, err := do(e, src)
	if err != nil {
		return nil, err
	}
	return starlark.String(out), nil
}

func hashBuiltin(name string, sum func([]byte) []byte) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var s string
		if err := starlark.UnpackArgs(b.Name(), args, kwargs, "string", &s); err != nil {
			return nil, err
		}
		return starlark.String(hex.EncodeToString(sum([]byte(s)))), nil
	})
}

// The re functions take Go (RE2) regular expressions, as starlib's do.
func reCompile(pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("re: %w", err)
	}
	return re, nil
}

func reFindall(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pattern, text string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pattern, "text", &text); err != nil {
		return nil, err
	}
	re, err := reCompile(pattern)
	if err != nil {
		return nil, err
	}
	var out []starlark.Value
	for _, m := range re.FindAllString(text, -1) {
		out = append(out, starlark.String(m))
	}
	return starlark.NewList(out), nil
}

// reMatch returns the first match and its groups as a tuple, or None.
func reMatch(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pattern, text string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pattern, "string", &text); err != nil {
		return nil, err
	}
	if b.Name() == "match" {
		pattern = `^(?:` + pattern + `)`
	}
	re, err := reCompile(pattern)
	if err != nil {
		return nil, err
	}
	m := re.FindStringSubmatch(text)
	if m == nil {
		return starlark.None, nil
	}
	t := make(starlark.Tuple, len(m))
	for i, s := range m {
		t[i] = starlark.String(s)
	}
	return t, nil
}

func reSplit(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pattern, text string
	maxsplit := 0
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pattern, "text", &text, "maxsplit?", &maxsplit); err != nil {
		return nil, err
	}
	re, err := reCompile(pattern)
	if err != nil {
		return nil, err
	}
	n := -1
	if maxsplit > 0 {
		n = maxsplit + 1
	}
	var out []starlark.Value
	for _, s := range re.Split(text, n) {
		out = append(out, starlark.String(s))
	}
	return starlark.NewList(out), nil
}

func reSub(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pattern, repl, text string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pattern, "repl", &repl, "text", &text); err != nil {
		return nil, err
	}
	re, err := reCompile(pattern)
	if err != nil {
		return nil, err
	}
	return starlark.String(re.ReplaceAllString(text, repl)), nil
}

// resourceField reads a string field of a resource dict: apiVersion, kind, or metadata's name and
// namespace.
func resourceField(r starlark.Value, field string) string {
	d, ok := r.(*starlark.Dict)
	if !ok {
		return ""
	}
	if field == "name" || field == "namespace" {
		m, found, _ := d.Get(starlark.String("metadata"))
		if d, ok = m.(*starlark.Dict); !found || !ok {
			return ""
		}
	}
	v, _, _ := d.Get(starlark.String(field))
	s, _ := starlark.AsString(v)
	return s
}

// matchGVK compares apiVersion and kind as written. kpt's match_gvk puts the whole apiVersion in
// the version of a GroupVersionKind with an empty group, so it never matches a resource of a named
// group (apps/v1 Deployment); that is a bug, not copied (docs/runtimes.md).
func matchGVK(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var r starlark.Value
	var apiVersion, kind string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 3, &r, &apiVersion, &kind); err != nil {
		return nil, err
	}
	return starlark.Bool(resourceField(r, "apiVersion") == apiVersion && resourceField(r, "kind") == kind), nil
}

func matchField(name, field string) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var r starlark.Value
		var want string
		if err := starlark.UnpackPositionalArgs(name, args, kwargs, 2, &r, &want); err != nil {
			return nil, err
		}
		return starlark.Bool(resourceField(r, field) == want), nil
	}
}
