package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Tracing is a process's OpenTelemetry tracing: the HTTP server, the
// Temporal client and worker (workflow start, workflows, activities) and
// outbound calls record spans of one trace per request. A nil *Tracing is
// tracing off: its methods hand back what they were given.
type Tracing struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
	shutdown   func(context.Context) error
}

// TracingEnabled says whether the standard OpenTelemetry environment asks
// for traces: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) without
// OTEL_TRACES_EXPORTER=none; OTEL_SDK_DISABLED=true turns it off.
func TracingEnabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch exp := os.Getenv("OTEL_TRACES_EXPORTER"); exp {
	case "otlp":
		return true
	case "":
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return false
	}
}

// TracingFromEnv sets up tracing as the OTEL_* environment says (nil when
// it asks for none): spans are batched to an OTLP/gRPC exporter configured
// by OTEL_EXPORTER_OTLP_* and sampled by OTEL_TRACES_SAMPLER; the service
// is "ontoflow" unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say
// otherwise.
func TracingFromEnv(ctx context.Context) (*Tracing, error) {
	if !TracingEnabled() {
		return nil, nil
	}
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("set up the OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "ontoflow")),
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil {
		return nil, fmt.Errorf("describe the traced process: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{provider: tp, propagator: propagation.TraceContext{}, shutdown: tp.Shutdown}, nil
}

// NewTracing traces into tp (tests give a provider with a span recorder).
func NewTracing(tp trace.TracerProvider) *Tracing {
	return &Tracing{provider: tp, propagator: propagation.TraceContext{}, shutdown: func(context.Context) error { return nil }}
}

// Interceptors are the Temporal client's interceptors: the SDK's
// OpenTelemetry interceptor, which the client's workers use too.
func (t *Tracing) Interceptors() ([]interceptor.ClientInterceptor, error) {
	if t == nil {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: t.provider.Tracer("go.temporal.io/sdk"), TextMapPropagator: t.propagator,
		DisableQueryTracing: true})
	if err != nil {
		return nil, fmt.Errorf("set up temporal tracing: %w", err)
	}
	return []interceptor.ClientInterceptor{i}, nil
}

// Handler traces the requests h serves; a traceparent header from the
// caller is the parent. Span names are the method only: paths hold ids.
func (t *Tracing) Handler(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return otelhttp.NewHandler(h, "http", otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(t.propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "HTTP " + r.Method }))
}

// Transport traces the calls made through rt (webhooks, Slack, Teams,
// function fetches), as children of the span in the request's context.
// A span records the call's URL as its context shows it (WithShownURL),
// never as sent: that may hold a secret's value.
func (t *Tracing) Transport(rt http.RoundTripper) http.RoundTripper {
	if t == nil {
		return rt
	}
	return otelhttp.NewTransport(shownURLs{rt}, otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(t.propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "HTTP " + r.Method + " outbound" }))
}

// shownURLs runs inside otelhttp's transport, on the span it started for
// the request. otelhttp sets url.full from the URL sent to, after the
// span starts (so no sampler or span processor's OnStart is given it) and
// before it calls rt; shownURLs sets it again, to ShownURL, and the SDK
// exports the last value set for a key. otelhttp offers no option to
// compute url.full itself (v0.68), and handing it a request with another
// URL would break its server.address and the call's own routing. The
// error it records as the span's status is the error rt returns, so
// that is redacted too. otelhttp's metrics name the host only.
type shownURLs struct{ rt http.RoundTripper }

func (s shownURLs) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(semconv.URLFull(ShownURL(ctx, r.URL)))
		if host := r.URL.Hostname(); redactHost(ctx, host) != host {
			span.SetAttributes(semconv.ServerAddress(redactHost(ctx, host)))
		}
	}
	res, err := s.rt.RoundTrip(r)
	return res, RedactError(ctx, err)
}

// Tracer is the tracer of the instrumentation named name (a package
// path) for spans of our own, e.g. SMTP sessions; nil when tracing is off.
func (t *Tracing) Tracer(name string) trace.Tracer {
	if t == nil {
		return nil
	}
	return t.provider.Tracer(name)
}

// Shutdown sends the spans still buffered.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.shutdown(ctx)
}
