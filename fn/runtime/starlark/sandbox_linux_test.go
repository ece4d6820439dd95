package starlark

import "testing"

func TestVMData(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{
		"Name:\tx\nVmPeak:\t  10 kB\nVmData:\t  145792 kB\nVmStk:\t 132 kB\n": 145792 << 10,
		"VmData:\t1 kB\n":  1 << 10,
		"VmData:\tlots\n":  -1,
		"VmData:\t12 MB\n": -1,
		"Name:\tx\n":       -1,
		"VmData:\t-5 kB\n": -1,
	} {
		got, err := vmData([]byte(in))
		if want < 0 {
			if err == nil {
				t.Errorf("vmData(%q) = %d, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("vmData(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func FuzzVMData(f *testing.F) {
	f.Add([]byte("VmData:\t  145792 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := vmData(b); err == nil && n < 0 {
			t.Fatalf("vmData(%q) = %d", b, n)
		}
	})
}
