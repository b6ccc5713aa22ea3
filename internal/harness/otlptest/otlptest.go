// Package otlptest is a real OTLP/gRPC trace collector on loopback for
// tests: it keeps every export request it is sent, as the bytes that
// would leave the process, so a test can grep them (for secrets, say).
package otlptest

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Receiver is the collector.
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu   sync.Mutex
	got  []byte
	reqs []*collectortrace.ExportTraceServiceRequest
}

// Export implements the OTLP trace service.
func (r *Receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, b...)
	r.reqs = append(r.reqs, req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Start serves a collector on a loopback port until the test ends and
// points the standard OTEL_* environment, which a process reads as it
// starts, at it.
func Start(t *testing.T) *Receiver {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rx := &Receiver{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, rx)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_SDK_DISABLED", "false")
	return rx
}

// Bytes is everything exported so far, as it arrived.
func (r *Receiver) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.got)
}

// URLs are the exported spans' url.full attributes, and statuses their
// status messages.
func (r *Receiver) URLs() (urls, statuses []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range r.reqs {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					for _, a := range sp.GetAttributes() {
						if a.GetKey() == "url.full" {
							urls = append(urls, a.GetValue().GetStringValue())
						}
					}
					statuses = append(statuses, sp.GetStatus().GetMessage())
				}
			}
		}
	}
	return urls, statuses
}
