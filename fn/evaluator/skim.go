package evaluator

import (
	"bytes"
	"context"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/internal/docbudget"
)

// skimList reads what a call that hands the list on as it came needs of a YAML ResourceList: its
// apiVersion, kind, functionConfig and results, without building its items, which go to the
// function (or come back from it) as bytes. On the warm path of fn serve reading 100 Deployments
// twice (the request, then the answer) was nearly all of the evaluator's CPU.
//
// The list is still scanned whole against the node budget of its size, so that a list past it
// is refused as when it is read (ResourceExhausted). ok is false, and the caller reads the list
// whole, for what the skim does not cover: JSON, flow style, document markers and directives,
// top-level keys that are not plain words, an items value on the key's own line, and anything
// whose remainder (the list without its items) does not read (an alias of an anchor among the
// items, say), and line breaks other than LF and CRLF.
func skimList(ctx context.Context, data []byte) (rl *fn.ResourceList, format fn.Format, ok bool, err error) {
	if err := docbudget.NewMeter(docbudget.ForBytes(int64(len(data))), ctx.Err).Scan(data); err != nil {
		return nil, 0, false, err
	}
	rest, ok := withoutItems(data)
	if !ok {
		return nil, 0, false, nil
	}
	l, f, derr := decodeList(ctx, rest)
	if derr != nil || f != fn.YAML {
		return nil, 0, false, nil
	}
	return l, f, true, nil
}

// withoutItems is a block-style YAML document with its top-level items entry left out. ok is
// false when the document is not of the plain shape withoutItems can cut without parsing (see
// skimList), or has no items to leave out.
func withoutItems(data []byte) (rest []byte, ok bool) {
	if hasOtherBreaks(data) {
		return nil, false
	}
	out := make([]byte, 0, 1024)
	seen := map[string]bool{}
	inItems, cut := false, false
	started := false // a top-level key was met: lines that begin with a space or "- " belong to it
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line = data[:i+1]
		}
		data = data[len(line):]
		switch c := line[0]; {
		case c == '#' || isBlankLine(line):
			// a comment or a blank line: left out with the items when among them
		case c == ' ' || (c == '-' && (len(line) == 1 || line[1] == ' ' || line[1] == '\n' || line[1] == '\r')):
			if !started {
				return nil, false
			}
		default:
			key, value, isKey := topKey(line)
			if !isKey || seen[string(key)] {
				return nil, false
			}
			seen[string(key)] = true
			started = true
			inItems = string(key) == "items"
			if inItems {
				if !isEmptyValue(value) {
					return nil, false // flow or scalar items, or a tag or anchor on them: read it whole
				}
				cut = true
			}
		}
		if !inItems {
			out = append(out, line...)
		}
	}
	if !cut {
		return nil, false
	}
	return out, true
}

// topKey splits a line of the form `word:` or `word: value` (a top-level key of a block mapping,
// a plain word of letters, digits and underscores) into the key and the rest of the line.
func topKey(line []byte) (key, value []byte, ok bool) {
	i := 0
	for i < len(line) && (line[i] >= 'a' && line[i] <= 'z' || line[i] >= 'A' && line[i] <= 'Z' || i > 0 && (line[i] >= '0' && line[i] <= '9' || line[i] == '_')) {
		i++
	}
	if i == 0 || i >= len(line) || line[i] != ':' {
		return nil, nil, false
	}
	value = line[i+1:]
	if len(value) > 0 && value[0] != ' ' && value[0] != '\n' && value[0] != '\r' {
		return nil, nil, false
	}
	return line[:i], value, true
}

// isBlankLine reports whether a line holds nothing but spaces and its line break.
func isBlankLine(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// isEmptyValue reports whether what follows a key on its line is nothing, or a comment.
func isEmptyValue(value []byte) bool {
	t := bytes.TrimLeft(value, " ")
	return isBlankLine(t) || t[0] == '#' && len(t) < len(value)
}

// hasOtherBreaks reports whether data holds a line break YAML reads that is not LF or CRLF: a CR
// alone, NEL, LS or PS.
func hasOtherBreaks(data []byte) bool {
	for i := bytes.IndexByte(data, '\r'); i >= 0; {
		if i+1 >= len(data) || data[i+1] != '\n' {
			return true
		}
		next := bytes.IndexByte(data[i+1:], '\r')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return bytes.Contains(data, []byte("\u0085")) || bytes.Contains(data, []byte("\u2028")) || bytes.Contains(data, []byte("\u2029"))
}
