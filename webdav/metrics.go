package webdav

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	bytesIn  *prometheus.CounterVec
	bytesOut *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ontoflow", Subsystem: "webdav", Name: "requests_total",
			Help: "WebDAV requests by method and status code.",
		}, []string{"method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ontoflow", Subsystem: "webdav", Name: "request_duration_seconds",
			Help:    "WebDAV request duration by method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"method"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ontoflow", Subsystem: "webdav", Name: "request_bytes_total",
			Help: "WebDAV request body bytes by method.",
		}, []string{"method"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ontoflow", Subsystem: "webdav", Name: "response_bytes_total",
			Help: "WebDAV response body bytes by method.",
		}, []string{"method"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.requests, err = register(reg, m.requests)
	if err != nil {
		return nil, err
	}
	m.duration, err = register(reg, m.duration)
	if err != nil {
		return nil, err
	}
	m.bytesIn, err = register(reg, m.bytesIn)
	if err != nil {
		return nil, err
	}
	m.bytesOut, err = register(reg, m.bytesOut)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, reusing an identical collector already registered
// (several handlers on one registry, as in tests).
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

var knownMethods = map[string]bool{
	"OPTIONS": true, "GET": true, "HEAD": true, "PUT": true, "DELETE": true, "MKCOL": true,
	"COPY": true, "MOVE": true, "PROPFIND": true, "PROPPATCH": true, "LOCK": true, "UNLOCK": true,
}

func (m *metrics) observe(method string, status int, d time.Duration, in, out int64) {
	if !knownMethods[method] {
		method = "OTHER"
	}
	m.requests.WithLabelValues(method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(method).Observe(d.Seconds())
	m.bytesIn.WithLabelValues(method).Add(float64(in))
	m.bytesOut.WithLabelValues(method).Add(float64(out))
}

// respWriter records the status and body size, keeping sendfile (ReadFrom)
// and Flush available.
type respWriter struct {
	http.ResponseWriter
	status int
	n      int64
	wrote  bool
}

func (w *respWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *respWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *respWriter) ReadFrom(r io.Reader) (int64, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err := rf.ReadFrom(r)
		w.n += n
		return n, err
	}
	n, err := copyBig(w.ResponseWriter, r)
	w.n += n
	return n, err
}

func (w *respWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *respWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}
