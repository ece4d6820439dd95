package evaluator

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
)

// Metrics are the evaluator's Prometheus metrics. Their function label takes only the functions
// the trusted catalogs list (group/kind@version), "starlark" and "none" (nothing resolved: a
// forwarded call, a refused one), their route label the ways a call goes (catalog, starlark,
// fallback, none), and their code label gRPC's codes, so a client cannot make series.
type Metrics struct {
	calls           *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	coldStarts      *prometheus.CounterVec
	cacheHits       prometheus.Counter
	reserved        prometheus.Gauge
	queued          prometheus.Gauge
	receiveTimeouts prometheus.Counter
}

// NewMetrics registers the evaluator's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "krm_catalog_evaluator_calls_total",
			Help: "EvaluateFunction calls by route (catalog, starlark, fallback, none), function and gRPC status code.",
		}, []string{"route", "function", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "krm_catalog_evaluator_call_duration_seconds",
			Help:    "EvaluateFunction latency by route and function, the wait for a slot included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "function"}),
		coldStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "krm_catalog_evaluator_cold_starts_total",
			Help: "Calls that started a function server (the first call of a spec v2 function, or after one exited).",
		}, []string{"function"}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "krm_catalog_evaluator_resolution_cache_hits_total",
			Help: "Calls whose image was resolved by an earlier call, without searching the catalogs.",
		}),
		reserved: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "krm_catalog_evaluator_memory_reserved_bytes",
			Help: "Memory the calls in flight reserved from the memory budget (--max-memory).",
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "krm_catalog_evaluator_queued_bytes",
			Help: "Size of the requests waiting for a slot or for memory (bounded by --max-queued-bytes).",
		}),
		receiveTimeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "krm_catalog_evaluator_receive_timeouts_total",
			Help: "Calls whose request did not arrive whole within --receive-timeout, and were cancelled.",
		}),
	}
	reg.MustRegister(m.calls, m.duration, m.coldStarts, m.cacheHits, m.reserved, m.queued, m.receiveTimeouts)
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
	m.calls.WithLabelValues(c.route, function, code.String()).Inc()
	m.duration.WithLabelValues(c.route, function).Observe(d.Seconds())
	if c.cold {
		m.coldStarts.WithLabelValues(function).Inc()
	}
	if c.cached {
		m.cacheHits.Inc()
	}
}

func (m *Metrics) setReserved(v int64) {
	if m != nil {
		m.reserved.Set(float64(v))
	}
}

func (m *Metrics) setQueued(v int64) {
	if m != nil {
		m.queued.Set(float64(v))
	}
}

func (m *Metrics) receiveTimeout() {
	if m != nil {
		m.receiveTimeouts.Inc()
	}
}
