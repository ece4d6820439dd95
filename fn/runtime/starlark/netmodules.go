package starlark

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/krm-catalog/krm-catalog/fn"
)

// ErrNoNetwork: a script called a module that reaches the network in a run that was not allowed it.
var ErrNoNetwork = errors.New("the network is not allowed")

// netAccess is what the modules that reach the network (http.star, and xlsx.star's get_url) may use: a
// client when the run is allowed the network, else nothing, and every call fails saying so. kpt's
// starlark function offers both modules, and they reach the network only when its container has
// one (`kpt fn eval --network`); kpt's render never gives it one.
type netAccess struct {
	ctx    context.Context // the script's: its deadline ends a request
	client *http.Client    // nil: not allowed
}

func (n netAccess) allowed(call string) error {
	if n.client == nil {
		return fmt.Errorf("%s: %w: a starlark function reaches the network only in a run allowed it (--allow-network), as kpt's starlark function needs --network", call, ErrNoNetwork)
	}
	return nil
}

// get fetches a response, its body bounded by the ResourceList size limit, as the function's
// output is.
func (n netAccess) do(req *http.Request) (*http.Response, []byte, error) {
	res, err := n.client.Do(req.WithContext(n.ctx))
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, fn.MaxResourceListBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(body) > fn.MaxResourceListBytes {
		return nil, nil, fmt.Errorf("%s %s: the response is larger than %d bytes", req.Method, req.URL, fn.MaxResourceListBytes)
	}
	return res, body, nil
}

// netModules are http.star (qri-io/starlib's http: get, put, post, delete, patch and options, each
// answered by a response with url, status_code, headers, encoding, body() and json()) and
// xlsx.star (get_url, which fetches a workbook: xlsx.go).
func netModules(n netAccess) map[string]starlark.StringDict {
	methods := starlark.StringDict{}
	for _, m := range []string{"get", "put", "post", "delete", "patch", "options"} {
		methods[m] = starlark.NewBuiltin(m, n.request(m))
	}
	return map[string]starlark.StringDict{
		"http.star": {"http": starlarkstruct.FromStringDict(starlarkstruct.Default, methods)},
		"xlsx.star": {"xlsx": starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
			"get_url": starlark.NewBuiltin("get_url", n.xlsxGetURL),
		})},
	}
}

// request is one of http's methods, with starlib's parameters: url, then params, headers, body,
// form_body, form_encoding, json_body and auth, all optional.
func (n netAccess) request(method string) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var (
			rawurl                string
			params, headers, form = &starlark.Dict{}, &starlark.Dict{}, &starlark.Dict{}
			formEncoding, body    starlark.String
			auth                  starlark.Tuple
			jsonBody              starlark.Value
		)
		if err := starlark.UnpackArgs(method, args, kwargs, "url", &rawurl, "params?", &params, "headers", &headers,
			"body", &body, "form_body", &form, "form_encoding", &formEncoding, "json_body", &jsonBody, "auth", &auth); err != nil {
			return nil, err
		}
		if err := n.allowed("http." + method); err != nil {
			return nil, err
		}
		if params.Len() > 0 {
			u, err := url.Parse(rawurl)
			if err != nil {
				return nil, err
			}
			q := u.Query()
			if err := eachString(params, q.Set); err != nil {
				return nil, err
			}
			u.RawQuery = q.Encode()
			rawurl = u.String()
		}
		req, err := http.NewRequest(strings.ToUpper(method), rawurl, nil)
		if err != nil {
			return nil, err
		}
		if err := eachString(headers, req.Header.Add); err != nil {
			return nil, err
		}
		switch len(auth) {
		case 0:
		case 2:
			user, uok := starlark.AsString(auth[0])
			pass, pok := starlark.AsString(auth[1])
			if !uok || !pok {
				return nil, errors.New("parsing auth: username and password must be strings")
			}
			req.SetBasicAuth(user, pass)
		default:
			return nil, errors.New("expected two values for auth params tuple")
		}
		if err := setBody(req, string(body), form, formEncoding, jsonBody); err != nil {
			return nil, err
		}
		res, data, err := n.do(req)
		if err != nil {
			return nil, err
		}
		return response(res, data), nil
	}
}

// eachString calls set with each key and value of d, which must be strings (starlib's rule).
func eachString(d *starlark.Dict, set func(k, v string)) error {
	for _, kv := range d.Items() {
		k, ok := starlark.AsString(kv[0])
		if !ok {
			return fmt.Errorf("expected key %s to be a string. got: '%s'", kv[0], kv[0].Type())
		}
		v, ok := kv[1].(starlark.String)
		if !ok {
			return fmt.Errorf("expected param value for key '%s' to be a string. got: '%s'", kv[0], kv[1].Type())
		}
		set(k, string(v))
	}
	return nil
}

// setBody is starlib's: body as it is; else json_body as JSON, and form_body (which replaces it)
// URL-encoded or as multipart form data.
func setBody(req *http.Request, body string, form *starlark.Dict, encoding starlark.String, jsonBody starlark.Value) error {
	if body != "" {
		req.Body = io.NopCloser(strings.NewReader(body))
		return nil
	}
	if jsonBody != nil && jsonBody.String() != "" {
		req.Header.Set("Content-Type", "application/json")
		v, err := starlarkToJSON(jsonBody, 0)
		if err != nil {
			return err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		req.Body = io.NopCloser(bytes.NewReader(data))
	}
	if form.Len() == 0 {
		return nil
	}
	values := url.Values{}
	if err := eachString(form, values.Add); err != nil {
		return err
	}
	var contentType string
	switch encoding {
	case "application/x-www-form-urlencoded", "":
		contentType = "application/x-www-form-urlencoded"
		req.Body = io.NopCloser(strings.NewReader(values.Encode()))
	case "multipart/form-data":
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		contentType = mw.FormDataContentType()
		keys := make([]string, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, v := range values[k] {
				if err := mw.WriteField(k, v); err != nil {
					return err
				}
			}
		}
		if err := mw.Close(); err != nil {
			return err
		}
		req.Body = io.NopCloser(&b)
	default:
		return fmt.Errorf("unknown form encoding: %s", encoding)
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", contentType)
	}
	return nil
}

// response is starlib's: url (after redirects), status_code, headers (each name's values joined
// with commas), encoding (the transfer encodings), body() and json().
func response(res *http.Response, body []byte) starlark.Value {
	headers := starlark.NewDict(len(res.Header))
	names := make([]string, 0, len(res.Header))
	for k := range res.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		_ = headers.SetKey(starlark.String(k), starlark.String(strings.Join(res.Header[k], ",")))
	}
	return starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
		"url":         starlark.String(res.Request.URL.String()),
		"status_code": starlark.MakeInt(res.StatusCode),
		"headers":     headers,
		"encoding":    starlark.String(strings.Join(res.TransferEncoding, ",")),
		"body": starlark.NewBuiltin("body", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return starlark.String(body), nil
		}),
		"json": starlark.NewBuiltin("json", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				return nil, err
			}
			return jsonToStarlark(v, 0)
		}),
	})
}

// starlarkToJSON turns a script's value into what encoding/json writes, as starlib's util.Unmarshal
// does before json.Marshal (which writes an object's keys sorted).
func starlarkToJSON(v starlark.Value, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("value nested too deeply")
	}
	switch x := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(x), nil
	case starlark.String:
		return string(x), nil
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			return i, nil
		}
		return json.Number(x.String()), nil
	case starlark.Float:
		return float64(x), nil
	case *starlark.Dict:
		m := make(map[string]any, x.Len())
		for _, kv := range x.Items() {
			k, ok := starlark.AsString(kv[0])
			if !ok {
				return nil, fmt.Errorf("json_body: dict key %s is not a string", kv[0])
			}
			ev, err := starlarkToJSON(kv[1], depth+1)
			if err != nil {
				return nil, err
			}
			m[k] = ev
		}
		return m, nil
	case starlark.Indexable:
		l := make([]any, x.Len())
		for i := range l {
			ev, err := starlarkToJSON(x.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			l[i] = ev
		}
		return l, nil
	}
	return nil, fmt.Errorf("json_body: a %s cannot be written as JSON", v.Type())
}

// xlsxGetURL is xlsx.get_url(url): the workbook at url, with get_sheets() and get_rows(sheet).
func (n netAccess) xlsxGetURL(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var rawurl string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &rawurl); err != nil {
		return nil, err
	}
	if err := n.allowed("xlsx.get_url"); err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodGet, rawurl, nil)
	if err != nil {
		return nil, err
	}
	_, data, err := n.do(req)
	if err != nil {
		return nil, err
	}
	wb, err := readWorkbook(data)
	if err != nil {
		return nil, err
	}
	return starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
		"get_sheets": starlark.NewBuiltin("get_sheets", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			d := starlark.NewDict(len(wb.sheets))
			for _, s := range wb.sheets {
				_ = d.SetKey(starlark.MakeInt(s.index), starlark.String(s.name))
			}
			return d, nil
		}),
		"get_rows": starlark.NewBuiltin("get_rows", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var sheet string
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &sheet); err != nil {
				return nil, err
			}
			rows, err := wb.rows(sheet)
			if err != nil {
				return nil, err
			}
			return stringRows(rows), nil
		}),
	}), nil
}

// atoi is strconv.Atoi that gives 0 for what is not a number, as excelize reads indexes.
func atoi(s string) int {
	i, _ := strconv.Atoi(s)
	return i
}
