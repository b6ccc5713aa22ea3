package functions

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ontoflow/ontoflow/telemetry"
)

// maxMetricVersions bounds the package@version pairs that keep their
// names in the metrics; later ones are counted as other@other.
const maxMetricVersions = 500

// metrics are the Prometheus series per package and version.
type metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// versions caps the package names and versions users publish.
	versions *telemetry.CappedLabel
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_function_runs_total",
			Help: "Function runs by package (inline for inline functions), version and status; beyond 500 package@version pairs other.",
		}, []string{"package", "version", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ontoflow_function_run_duration_seconds",
			Help:    "Wall time of function runs by package and version.",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16),
		}, []string{"package", "version"}),
	}
	m.versions = telemetry.NewCappedLabel(maxMetricVersions)
	reg.MustRegister(m.runs, m.duration)
	return m
}

func (m *metrics) observe(pkg, version, status string, d time.Duration) {
	if m.versions.Value(pkg+"@"+version) == telemetry.Other {
		pkg, version = telemetry.Other, telemetry.Other
	}
	m.runs.WithLabelValues(pkg, version, status).Inc()
	m.duration.WithLabelValues(pkg, version).Observe(d.Seconds())
}
