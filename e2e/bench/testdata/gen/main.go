// Command gen is a generator function for the output-memory benchmark: whatever it is sent, it
// answers a ResourceList of ConfigMaps of about 255 MiB (just under the 256 MiB fn run takes), in the format it was sent (JSON when
// the input starts with '{', YAML otherwise), streamed so that its own memory stays small.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

const (
	// just under fn run's limit on a function's output (256 MiB)
	total   = 255 << 20
	entries = 16
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen: read the ResourceList:", err)
		os.Exit(1)
	}
	out := &counter{w: os.Stdout}
	w := bufio.NewWriterSize(out, 1<<20)
	asJSON := bytes.HasPrefix(bytes.TrimSpace(in), []byte("{"))
	value := strings.Repeat("x", 100)
	if asJSON {
		w.WriteString(`{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[`)
	} else {
		w.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	}
	for i := 0; out.n+int64(w.Buffered()) < total; i++ {
		if asJSON {
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"generated-%d","labels":{"app":"gen"}},"data":{`, i)
			for k := range entries {
				if k > 0 {
					w.WriteByte(',')
				}
				fmt.Fprintf(w, `"key-%02d":"%s-%d"`, k, value, i)
			}
			w.WriteString("}}")
		} else {
			fmt.Fprintf(w, "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: generated-%d\n    labels:\n      app: gen\n  data:\n", i)
			for k := range entries {
				fmt.Fprintf(w, "    key-%02d: %s-%d\n", k, value, i)
			}
		}
	}
	if asJSON {
		w.WriteString("]}\n")
	}
	if err := w.Flush(); err != nil {
		os.Exit(1)
	}
}

// counter counts what goes through it.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
