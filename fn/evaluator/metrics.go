package evaluator

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
)

// Metrics are the evaluator's Prometheus metrics. Their function label takes only the functions
// the trusted catalogs list (group/kind@version), "starlark" and "none" (nothing resolved), and
// their code label gRPC's codes, so a client cannot make series.
type Metrics struct {
	calls      *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	coldStarts *prometheus.CounterVec
	cacheHits  prometheus.Counter
}

// NewMetrics registers the evaluator's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "krm_catalog_evaluator_calls_total",
			Help: "EvaluateFunction calls by function and gRPC status code.",
		}, []string{"function", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "krm_catalog_evaluator_call_duration_seconds",
			Help:    "EvaluateFunction latency by function, the wait for a slot included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"function"}),
		coldStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "krm_catalog_evaluator_cold_starts_total",
			Help: "Calls that started a function server (the first call of a spec v2 function, or after one exited).",
		}, []string{"function"}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "krm_catalog_evaluator_resolution_cache_hits_total",
			Help: "Calls whose image was resolved by an earlier call, without searching the catalogs.",
		}),
	}
	reg.MustRegister(m.calls, m.duration, m.coldStarts, m.cacheHits)
	return m
}

func (m *Metrics) observe(c call, code codes.Code, d time.Duration) {
	if m == nil {
		return
	}
	function := c.function
	if function == "" {
		function = "none"
	}
	m.calls.WithLabelValues(function, code.String()).Inc()
	m.duration.WithLabelValues(function).Observe(d.Seconds())
	if c.cold {
		m.coldStarts.WithLabelValues(function).Inc()
	}
	if c.cached {
		m.cacheHits.Inc()
	}
}
