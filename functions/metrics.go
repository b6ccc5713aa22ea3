package functions

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Prometheus series per package and version.
type metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_function_runs_total",
			Help: "Function runs by package (inline for inline functions), version and status.",
		}, []string{"package", "version", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ontoflow_function_run_duration_seconds",
			Help:    "Wall time of function runs by package and version.",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16),
		}, []string{"package", "version"}),
	}
	reg.MustRegister(m.runs, m.duration)
	return m
}

func (m *metrics) observe(pkg, version, status string, d time.Duration) {
	m.runs.WithLabelValues(pkg, version, status).Inc()
	m.duration.WithLabelValues(pkg, version).Observe(d.Seconds())
}
