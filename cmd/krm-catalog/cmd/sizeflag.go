package cmd

import (
	"fmt"
	"math"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"
)

// byteSize is a flag holding a size in bytes, written as 2GiB, 512MB or 1048576.
type byteSize int64

func (b *byteSize) String() string { return humanize.IBytes(uint64(*b)) }
func (b *byteSize) Type() string   { return "size" }

func (b *byteSize) Set(s string) error {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return fmt.Errorf("%q is not a size (such as 512MiB, 2GiB or a number of bytes)", s)
	}
	if n == 0 || n > math.MaxInt64 {
		return fmt.Errorf("%q: give a size above 0 and below 8EiB", s)
	}
	*b = byteSize(n)
	return nil
}

// addSizeFlag defines a size flag with its default.
func addSizeFlag(fs *pflag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	fs.Var((*byteSize)(p), name, usage)
}
