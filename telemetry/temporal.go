package telemetry

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// temporalReportEvery is how often the SDK's counters and gauges reach the
// registry (tally reports on an interval); scrapes are rarer.
const temporalReportEvery = time.Second

// TemporalMetrics is a Temporal client's metrics handler that exports the
// SDK's metrics on reg with their standard Prometheus names (counters end
// in _total, latencies are histograms in _seconds), as Temporal's own
// dashboards query them. Close stops the reporting.
func TemporalMetrics(reg prometheus.Registerer, log *slog.Logger) (client.MetricsHandler, func()) {
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       reg,
		DefaultTimerType: tallyprom.HistogramTimerType,
		DefaultHistogramBuckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5,
			1, 2.5, 5, 10, 30, 60},
		OnRegisterError: func(err error) {
			// The SDK uses one name with two tag sets in rare paths;
			// the second is dropped, as in Temporal's samples.
			log.Debug("temporal sdk metric not registered", "err", err)
		},
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, temporalReportEvery)
	return sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)), func() {
		if err := closer.Close(); err != nil {
			log.Warn("stop temporal sdk metrics", "err", err)
		}
	}
}
