package evaluator_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/fn/evaluator"
)

// What a function server writes becomes log records: one a line, the line an escaped string (a line
// that looks like a record stays data), cut at 1 KiB, and at most 64 KiB a second past a burst,
// what is dropped counted in the next record.
func TestStderrLog(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	l := evaluator.NewStderrLog(slog.New(slog.NewJSONHandler(&out, nil)))
	forged := `{"level":"ERROR","msg":"forged"}`
	if _, err := l.Write([]byte("serving on 127.0.0.1:1234\n" + forged + "\npartial ")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write([]byte("line\n" + strings.Repeat("x", 5000) + "\n")); err != nil {
		t.Fatal(err)
	}
	recs := stderrRecords(t, out.String(), forged)
	want := []string{"serving on 127.0.0.1:1234", forged, "partial line", strings.Repeat("x", 1024)}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(recs), len(want), out.String())
	}
	for i, w := range want {
		if recs[i].Msg != "function stderr" || recs[i].Line != w {
			t.Errorf("record %d: %q %.40q, want %.40q", i, recs[i].Msg, recs[i].Line, w)
		}
	}
	if recs[3].Cut != 5000-1024 {
		t.Errorf("cut %d bytes of the long line, want %d", recs[3].Cut, 5000-1024)
	}

	// a flood: past the burst, lines are dropped and counted
	out.Reset()
	flood := []byte(strings.Repeat(strings.Repeat("y", 999)+"\n", 2000)) // 2 MB at once
	if _, err := l.Write(flood); err != nil {
		t.Fatal(err)
	}
	if n := out.Len(); n > 512<<10 {
		t.Errorf("a 2 MB flood logged %d bytes", n)
	}
	out.Reset()
	if _, err := l.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}
	if recs := stderrRecords(t, out.String(), ""); len(recs) != 1 || recs[0].Line != "after" || recs[0].Dropped == 0 {
		t.Errorf("the record after a flood: %+v, want it to count the lines dropped", recs)
	}
}

type stderrRecord struct {
	Msg, Line string
	Cut       int `json:"cut_bytes"`
	Dropped   int `json:"lines_dropped_before"`
}

// stderrRecords reads a JSON log; no line of it may be forged.
func stderrRecords(t *testing.T, log, forged string) []stderrRecord {
	t.Helper()
	var recs []stderrRecord
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if line == "" {
			continue
		}
		if line == forged {
			t.Fatal("a line the function wrote is a record of the log")
		}
		var r stderrRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		recs = append(recs, r)
	}
	return recs
}
