package e2e

import (
	"bytes"
	"io"
	"log/slog"
	"os"
)

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
