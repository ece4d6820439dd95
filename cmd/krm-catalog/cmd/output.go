package cmd

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/krm-catalog/krm-catalog/fn"
)

// marshalJSON is every command's --format json: indented two spaces, one value, a newline, and
// <, > and & as themselves (the output is read by programs and people, never embedded in HTML).
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeJSON writes v to w as marshalJSON does.
func writeJSON(w io.Writer, v any) error {
	data, err := marshalJSON(v)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// marshalOutput renders v as --format json does, or as YAML with the same field names (the catalog
// types carry JSON tags only).
func marshalOutput(v any, format string) ([]byte, error) {
	data, err := marshalJSON(v)
	if err != nil || format == "json" {
		return data, err
	}
	n, err := fn.DecodeJSONNode(data)
	if err != nil {
		return nil, err
	}
	return fn.EncodeYAML(n)
}
