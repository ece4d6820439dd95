package e2e

import "log/slog"

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }
