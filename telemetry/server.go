package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ontoflow/ontoflow/defaults"
)

// DefaultWorkerMetricsAddr is where `ontoflow worker` serves /metrics
// unless --metrics-addr says otherwise.
const DefaultWorkerMetricsAddr = defaults.WorkerMetricsAddr

// MetricsServer serves /metrics on its own listener.
type MetricsServer struct {
	srv *http.Server
	url string
}

// ServeMetrics serves g at /metrics on addr (port 0: any free port) until
// Shutdown.
func ServeMetrics(addr string, g prometheus.Gatherer, log *slog.Logger) (*MetricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	s := &MetricsServer{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		url: "http://" + ln.Addr().String() + "/metrics",
	}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	return s, nil
}

// URL is where the metrics are served.
func (s *MetricsServer) URL() string { return s.url }

// Shutdown stops serving, letting a scrape in progress finish.
func (s *MetricsServer) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }
