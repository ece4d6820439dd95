package cmd

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLogLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		level     string
		debug     bool
		info      bool
		wantError bool
	}{
		{"debug", true, true, false},
		{"info", false, true, false},
		{"WARN", false, false, false},
		{"error", false, false, false},
		{"loud", false, false, true},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		logger, err := newLeveledLogger(IO{Err: &buf}, "json", tc.level)
		if tc.wantError {
			if err == nil || !strings.Contains(err.Error(), "--log-level") {
				t.Errorf("level %q: error %v, want a usage error", tc.level, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("level %q: %v", tc.level, err)
		}
		ctx := context.Background()
		if got := logger.Enabled(ctx, slog.LevelDebug); got != tc.debug {
			t.Errorf("level %q: debug enabled %v, want %v", tc.level, got, tc.debug)
		}
		if got := logger.Enabled(ctx, slog.LevelInfo); got != tc.info {
			t.Errorf("level %q: info enabled %v, want %v", tc.level, got, tc.info)
		}
	}
}

func TestServeFlagsFromEnvironment(t *testing.T) {
	t.Setenv("KRM_CATALOG_LOG_LEVEL", "debug")
	t.Setenv("KRM_CATALOG_DB_MAX_CONNS", "7")
	cmd := newServeCmd(IO{})
	if got := cmd.Flags().Lookup("log-level").DefValue; got != "debug" {
		t.Errorf("--log-level default %q, want the environment's debug", got)
	}
	if got := cmd.Flags().Lookup("db-max-conns").DefValue; got != "7" {
		t.Errorf("--db-max-conns default %q, want the environment's 7", got)
	}
}

func TestShutdownDelayDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		set  bool
		flag time.Duration
		want time.Duration
	}{
		{"postgres://db/krm", false, defaultShutdownDelay, defaultShutdownDelay},
		{"postgres://db/krm", true, 0, 0},
		{"", false, defaultShutdownDelay, 0},
		{"", true, 3 * time.Second, 3 * time.Second},
	}
	for _, tc := range tests {
		if got := shutdownDelay(tc.url, tc.set, tc.flag); got != tc.want {
			t.Errorf("shutdownDelay(%q, set %v, %s) = %s, want %s", tc.url, tc.set, tc.flag, got, tc.want)
		}
	}
	if got := newServeCmd(IO{}).Flags().Lookup("shutdown-delay").DefValue; got != defaultShutdownDelay.String() {
		t.Errorf("--shutdown-delay default %s, want %s", got, defaultShutdownDelay)
	}
}
