// Package faultproxy puts a TCP proxy on loopback between a process and a
// service it depends on (Postgres, Temporal, S3) and injects the faults of
// the production fault matrix into it: added latency, connections reset
// mid-stream, a blackhole (bytes stop flowing, nothing is closed), and
// the service down (every connection closed, new ones refused), as a
// restart of the service looks from the client's side of the wire. It
// uses toxiproxy as a library, so no proxy process or control API is run.
package faultproxy

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy forwards a loopback port to an upstream address and carries the
// faults currently injected.
type Proxy struct {
	p    *toxiproxy.Proxy
	mu   sync.Mutex
	live []string // names of the toxics in force, for Clear
	down bool     // stopped by Down, started again by Clear
}

// Start listens on a free loopback port and forwards it to upstream
// (host:port). Close stops it.
func Start(name, upstream string) (*Proxy, error) {
	// The server object only carries the logger and (disabled) metrics the
	// proxy needs; no HTTP control API is started.
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start fault proxy %s to %s: %w", name, upstream, err)
	}
	return &Proxy{p: p}, nil
}

// Addr is the loopback host:port clients dial instead of upstream.
func (x *Proxy) Addr() string { return x.p.Listen }

// Port is Addr's port.
func (x *Proxy) Port() string {
	_, port, _ := net.SplitHostPort(x.p.Listen)
	return port
}

// Close stops listening and closes every proxied connection.
func (x *Proxy) Close() { x.p.Stop() }

// Latency adds d to every chunk of data in both directions, on the
// connections open now and those opened later, until Clear.
func (x *Proxy) Latency(ctx context.Context, d time.Duration) error {
	return x.both(ctx, "latency", fmt.Sprintf(`{"latency":%d}`, d.Milliseconds()))
}

// Reset resets (TCP RST) every connection that carries data from now on,
// until Clear: connections in use are cut mid-stream and new ones are cut
// on their first bytes.
func (x *Proxy) Reset(ctx context.Context) error {
	return x.add(ctx, "reset_peer", "upstream", `{"timeout":0}`)
}

// Blackhole stops all data in both directions without closing anything,
// as a peer that is unreachable does, until Clear (which then closes the
// stalled connections).
func (x *Proxy) Blackhole(ctx context.Context) error {
	return x.both(ctx, "timeout", `{"timeout":0}`)
}

// Down closes every connection and refuses new ones until Clear, which
// listens on the same port again: the service restarted, seen from the
// wire. Why not a real restart: the tests share one Postgres server with
// other tests, which a restart would break too.
func (x *Proxy) Down(_ context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.p.Stop()
	x.down = true
	return nil
}

// Clear removes every fault; the proxy forwards normally again.
func (x *Proxy) Clear(ctx context.Context) error {
	x.mu.Lock()
	names := x.live
	x.live = nil
	down := x.down
	x.down = false
	x.mu.Unlock()
	var errs []string
	if down {
		if err := x.p.Start(); err != nil {
			errs = append(errs, fmt.Sprintf("listen again: %v", err))
		}
	}
	for _, n := range names {
		if err := x.p.Toxics.RemoveToxic(ctx, n); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", n, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("clear faults of %s: %s", x.p.Name, strings.Join(errs, "; "))
	}
	return nil
}

// For injects a fault for d, then clears it; ctx ending clears it early.
func (x *Proxy) For(ctx context.Context, d time.Duration, inject func(context.Context) error) error {
	if err := inject(ctx); err != nil {
		return err
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	return x.Clear(context.WithoutCancel(ctx))
}

func (x *Proxy) both(ctx context.Context, kind, attrs string) error {
	if err := x.add(ctx, kind, "upstream", attrs); err != nil {
		return err
	}
	return x.add(ctx, kind, "downstream", attrs)
}

func (x *Proxy) add(_ context.Context, kind, stream, attrs string) error {
	name := kind + "_" + stream
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, kind, stream, attrs)
	if _, err := x.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("add %s fault to %s: %w", name, x.p.Name, err)
	}
	x.mu.Lock()
	x.live = append(x.live, name)
	x.mu.Unlock()
	return nil
}
