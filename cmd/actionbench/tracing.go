package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"sync/atomic"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/config"
	"github.com/ontoflow/ontoflow/telemetry"
)

// receiver is an OTLP/gRPC trace receiver on loopback that counts what it
// is sent: the far end of the exporter tracing measures.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	spans atomic.Int64
}

func (r *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			r.spans.Add(int64(len(ss.GetSpans())))
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// tracingOverhead starts two dev stacks, one with tracing off and one
// exporting over OTLP to a receiver on loopback, and times sequential
// executes on each in alternating rounds (drift and other load fall on
// both alike); it prints each round's p50 and the ratio of the medians.
func tracingOverhead(log *slog.Logger, seq, rounds int) error {
	ctx := context.Background()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rx := &receiver{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, rx)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())
	os.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	tr, err := telemetry.TracingFromEnv(ctx)
	if err != nil || tr == nil {
		return fmt.Errorf("tracing from the environment: %v (%v)", err, tr)
	}
	type stack struct {
		name string
		run  func(i int) error
		p50s []time.Duration
	}
	var stacks []*stack
	for _, s := range []struct {
		name string
		opts []app.Option
	}{{"off", nil}, {"on", []app.Option{app.WithTracing(tr)}}} {
		b, actionID, targets, stop, err := startBenchApp(ctx, log, seq, s.opts...)
		if err != nil {
			return err
		}
		defer stop()
		st := &stack{name: s.name}
		st.run = func(i int) error {
			return b.post("/api/v1/ontology/actions/"+actionID+"/execute",
				map[string]any{"target_object_id": targets[i%len(targets)], "parameters": map[string]any{"priority": i}}, 200, nil)
		}
		for i := range 10 { // warm
			if err := st.run(i); err != nil {
				return err
			}
		}
		stacks = append(stacks, st)
	}
	for r := range rounds {
		for _, st := range stacks {
			p50, p95, err := sequential(seq, st.run)
			if err != nil {
				return err
			}
			st.p50s = append(st.p50s, p50)
			fmt.Printf("round %d tracing %-3s sequential p50 %s p95 %s\n", r+1, st.name, ms(p50), ms(p95))
		}
	}
	if err := tr.Shutdown(ctx); err != nil {
		return err
	}
	off, on := medianOf(stacks[0].p50s), medianOf(stacks[1].p50s)
	fmt.Printf("median p50: off %s, on %s: %.3fx; the receiver got %d spans\n", ms(off), ms(on),
		float64(on)/float64(off), rx.spans.Load())
	return nil
}

// startBenchApp starts a dev stack in a new directory with the bench's
// type, action and n targets.
func startBenchApp(ctx context.Context, log *slog.Logger, n int, opts ...app.Option) (*bench, string, []string, func(), error) {
	dir, err := os.MkdirTemp("", "actionbench")
	if err != nil {
		return nil, "", nil, nil, err
	}
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	cfg, check := config.Bind(fs, config.ModeDev)
	if err := fs.Parse([]string{"--data-dir", dir, "--http-addr", "127.0.0.1:0", "--temporal-port", "0", "--ui-port", "-1",
		"--admin-password", "bench-password-1", "--log-level", "error"}); err != nil {
		return nil, "", nil, nil, err
	}
	if err := check(); err != nil {
		return nil, "", nil, nil, err
	}
	a, err := app.Start(ctx, app.Dev, cfg, log, opts...)
	if err != nil {
		return nil, "", nil, nil, fmt.Errorf("start dev: %w", err)
	}
	stop := func() { a.Stop(ctx); os.RemoveAll(dir) }
	b := &bench{api: a.APIURL, user: "admin", pass: "bench-password-1", c: a.Temporal}
	actionID, targets, err := b.setup(max(n, 4))
	if err != nil {
		stop()
		return nil, "", nil, nil, err
	}
	return b, actionID, targets, stop, nil
}

func medianOf(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
