package senders_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ontoflow/ontoflow/notifications/senders"
)

// With tracing on, an SMTP session is one client span beside the
// outbound HTTP calls' ("HTTP POST outbound"): "SMTP send outbound", a
// child of the caller's span, naming the server (server.address,
// server.port) and failed (error status, no address in it) when a
// message was not sent.
func TestEmailSessionIsTraced(t *testing.T) {
	serverTLS, pool := selfSigned(t)
	ms := startMailServer(t, serverTLS)
	m := mailer(t, "smtp://127.0.0.1:"+strconv.Itoa(ms.port), pool)
	sr := tracetest.NewSpanRecorder()
	m.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)).Tracer("test")
	ctx, parent := m.Tracer.Start(context.Background(), "deliver")

	for _, to := range [][]string{{"alice@ontoflow.test"}, {"alice@ontoflow.test", "refused@ontoflow.test"}} {
		if _, err := m.Send(ctx, to, senders.Message{Title: "t", Body: "b"}); err != nil {
			t.Fatalf("send to %v: %v", to, err)
		}
	}
	parent.End()

	var smtp []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "SMTP send outbound" {
			smtp = append(smtp, s)
		}
	}
	if len(smtp) != 2 {
		t.Fatalf("%d SMTP spans, want one per session (2)", len(smtp))
	}
	for i, s := range smtp {
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		if s.SpanKind() != trace.SpanKindClient || s.Parent().SpanID() != parent.SpanContext().SpanID() ||
			attrs["server.address"].AsString() != "127.0.0.1" || attrs["server.port"].AsInt64() != int64(ms.port) {
			t.Errorf("span %d: kind %v, parent %v, attributes %v", i, s.SpanKind(), s.Parent().SpanID(), s.Attributes())
		}
	}
	if st := smtp[0].Status(); st.Code == codes.Error {
		t.Errorf("a session that sent everything: status %+v", st)
	}
	if st := smtp[1].Status(); st.Code != codes.Error || strings.Contains(st.Description, "@") {
		t.Errorf("a session with a refused address: status %+v, want an error naming no address", st)
	}
}
