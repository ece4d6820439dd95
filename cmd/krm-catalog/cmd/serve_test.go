package cmd

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// TestMetricsRegistry holds what serve and fn serve expose besides their own metrics, and what
// Prometheus's default registry holds (process_max_fds is read from /proc/self/limits).
func TestMetricsRegistry(t *testing.T) {
	t.Parallel()
	own := prometheus.NewCounter(prometheus.CounterOpts{Name: "krm_catalog_test_total", Help: "a test counter"})
	want := []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_open_fds", "process_max_fds", "process_resident_memory_bytes"}
	tests := []struct {
		name     string
		gatherer prometheus.Gatherer
		want     []string
	}{
		{"serve's registry", newMetricsRegistry(own), append(want, "krm_catalog_test_total")},
		{"the default registry", prometheus.DefaultGatherer, want},
	}
	for _, tc := range tests {
		families, err := tc.gatherer.Gather()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := map[string]bool{}
		for _, f := range families {
			// process_max_fds comes from /proc/self/limits, parsed with a regular expression
			if f.GetName() == "process_max_fds" {
				if v := f.GetMetric()[0].GetGauge().GetValue(); v <= 0 {
					t.Errorf("%s: process_max_fds is %v", tc.name, v)
				}
			}
			got[f.GetName()] = true
		}
		for _, name := range tc.want {
			if !got[name] {
				t.Errorf("%s gathers no %s", tc.name, name)
			}
		}
	}
}
