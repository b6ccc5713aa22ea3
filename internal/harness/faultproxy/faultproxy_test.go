package faultproxy_test

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/faultproxy"
)

// echoServer answers every line with the same line, on loopback.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// roundTrip sends one line and waits up to wait for the echo.
func roundTrip(c net.Conn, wait time.Duration) (time.Duration, error) {
	start := time.Now()
	c.SetDeadline(start.Add(wait))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return time.Since(start), err
}

// TestFaults: each fault does what the matrix says on a live connection,
// and Clear brings the proxy back to forwarding.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	p, err := faultproxy.Start("echo", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := dial()
	if _, err := roundTrip(c, 2*time.Second); err != nil {
		t.Fatalf("no fault: %v", err)
	}

	if err := p.Latency(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d, err := roundTrip(c, 2*time.Second); err != nil || d < 200*time.Millisecond {
		t.Errorf("latency 100ms each way: round trip %v, %v; want >= 200ms", d, err)
	}
	if err := p.Clear(ctx); err != nil {
		t.Fatal(err)
	}

	if err := p.Blackhole(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, 300*time.Millisecond); err == nil {
		t.Error("blackhole: the echo came through")
	}
	if err := p.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(dial(), 2*time.Second); err != nil {
		t.Errorf("after the blackhole is cleared a new connection fails: %v", err)
	}

	c = dial()
	if err := p.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, 2*time.Second); err == nil {
		t.Error("reset: the echo came through")
	}
	if err := p.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(dial(), 2*time.Second); err != nil {
		t.Errorf("after the reset is cleared a new connection fails: %v", err)
	}

	c = dial()
	if err := p.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, 2*time.Second); err == nil {
		t.Error("down: the echo came through on a connection opened before")
	}
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		c.Close()
		t.Error("down: a new connection was accepted")
	}
	if err := p.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(dial(), 2*time.Second); err != nil {
		t.Errorf("after down is cleared a new connection fails: %v", err)
	}
}
