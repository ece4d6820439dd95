package server

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/krm-catalog/krm-catalog/store"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// series holds each label set's counter and histogram once looked up (seriesKey →
	// *httpSeries): the vectors hash and check every label value on each lookup, and format the
	// status, work that every request repeated. The label sets are bounded (routes, methods,
	// statuses), so this map is too.
	series sync.Map
}

type seriesKey struct {
	route, method string
	status        int
}

type httpSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "krm_catalog_http_requests_total",
			Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "krm_catalog_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe records one request. Routes are labelled by pattern, not path, so the label set stays bounded.
func (m *httpMetrics) observe(r *http.Request, status int, took time.Duration) {
	k := seriesKey{route: routeOf(r), method: methodOf(r), status: status}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &httpSeries{
			requests: m.requests.WithLabelValues(k.route, k.method, strconv.Itoa(status)),
			latency:  m.latency.WithLabelValues(k.route, k.method),
		})
	}
	se := v.(*httpSeries)
	se.requests.Inc()
	se.latency.Observe(took.Seconds())
}

// methodOf is the request's method as a bounded label: a client may send any token as a method,
// and a series per token would grow the process and every scrape without bound.
func methodOf(r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return r.Method
	}
	return "other"
}

// routeOf is the route pattern a request matched, a bounded label.
func routeOf(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return rc.RoutePattern()
	}
	return "unmatched"
}

// PoolStatser reports connection pool statistics (store.Store.Stats).
type PoolStatser interface {
	Stats() store.PoolStats
}

// PoolCollector exports the statistics of the database connection pool.
type PoolCollector struct {
	pool                                  PoolStatser
	canceledAcquires                      *prometheus.Desc
	acquired, idle, total, max            *prometheus.Desc
	acquires, emptyAcquires, acquireWaits *prometheus.Desc
}

// NewPoolCollector describes the pool statistics as metrics.
func NewPoolCollector(pool PoolStatser) *PoolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("krm_catalog_db_pool_"+name, help, nil, nil)
	}
	return &PoolCollector{
		pool:             pool,
		acquired:         d("acquired_connections", "Connections in use."),
		idle:             d("idle_connections", "Idle connections."),
		total:            d("total_connections", "Open connections."),
		max:              d("max_connections", "The pool's size limit."),
		acquires:         d("acquires_total", "Connections handed out."),
		emptyAcquires:    d("empty_acquires_total", "Acquires that had to wait for a connection."),
		acquireWaits:     d("acquire_wait_seconds_total", "Time spent waiting for a connection."),
		canceledAcquires: d("canceled_acquires_total", "Acquires given up, acquire timeouts among them."),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.idle, c.total, c.max, c.acquires, c.emptyAcquires, c.acquireWaits, c.canceledAcquires} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.pool.Stats()
	ch <- prometheus.MustNewConstMetric(c.acquired, prometheus.GaugeValue, float64(st.Acquired))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(st.Idle))
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(st.Total))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(st.Max))
	ch <- prometheus.MustNewConstMetric(c.acquires, prometheus.CounterValue, float64(st.Acquires))
	ch <- prometheus.MustNewConstMetric(c.emptyAcquires, prometheus.CounterValue, float64(st.EmptyAcquires))
	ch <- prometheus.MustNewConstMetric(c.acquireWaits, prometheus.CounterValue, st.AcquireWait.Seconds())
	ch <- prometheus.MustNewConstMetric(c.canceledAcquires, prometheus.CounterValue, float64(st.Canceled))
}
