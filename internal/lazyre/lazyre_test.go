package lazyre

import "testing"

func TestNew(t *testing.T) {
	t.Parallel()
	re := New(`^a+$`)
	if re() != re() {
		t.Error("compiled twice")
	}
	for in, want := range map[string]bool{"aaa": true, "ab": false, "": false} {
		if got := re().MatchString(in); got != want {
			t.Errorf("MatchString(%q) = %v, want %v", in, got, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a malformed expression did not panic on first use")
		}
	}()
	New(`(`)()
}
