//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// bigPut measures each Ontoflow server's resident memory during n
// concurrent PUTs of size bytes (issue 28: growth ≤ 64 MiB per concurrent
// upload, flat afterwards). Apache is left out: its memory is not what
// the target is about, and it would write the same gigabytes again.
func (b *benches) bigPut(ctx context.Context) error {
	n, size := b.cfg.bigPutN, int64(b.cfg.bigPutMiB)<<20
	vals := make([]string, len(b.servers))
	vals[0] = "—"
	growth := make([]float64, len(b.servers))
	var notes []string
	for i, s := range b.servers[1:] {
		i++
		if s.settle != nil {
			if err := s.settle(); err != nil {
				return err
			}
		}
		b.quiesce()
		pids, err := s.pids()
		if err != nil {
			return err
		}
		before := totalRSS(snapshot(pids))
		var peak int64
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				peak = max(peak, totalRSS(snapshot(pids)))
			}
		}()
		start := time.Now()
		err = s.putConcurrent(ctx, n, size)
		took := time.Since(start)
		close(stop)
		<-done
		if err != nil {
			return err
		}
		if s.settle != nil {
			if err := s.settle(); err != nil {
				return err
			}
		}
		time.Sleep(2 * time.Second)
		after := totalRSS(snapshot(pids))
		growth[i] = float64(peak-before) / 1024
		vals[i] = fmt.Sprintf("+%.0f MiB", growth[i])
		notes = append(notes, fmt.Sprintf("%s: RSS before %.0f MiB, peak %.0f MiB, %.0f MiB after the uploads and a GC; %d x %d MiB in %.1f s.",
			s.name, float64(before)/1024, float64(peak)/1024, float64(after)/1024, n, size>>20, took.Seconds()))
	}
	limit := float64(64 * n)
	x := row{
		name:  fmt.Sprintf("%d concurrent PUTs of %d MiB: server RSS growth", n, size>>20),
		vals:  vals,
		ratio: "—", target: fmt.Sprintf("≤ %.0f MiB", limit), met: growth[1] <= limit,
		notes: strings.Join(notes, " "),
	}
	if len(b.servers) > 2 {
		x.s3ratio, x.s3target, x.s3met = ratio(growth[2], growth[1]), fmt.Sprintf("≤ %.0f MiB", limit), growth[2] <= limit
	}
	b.rep.add(x)
	return nil
}

// putConcurrent PUTs n files of size bytes at once, their bodies
// generated on the fly so the client holds no copy.
func (s *server) putConcurrent(ctx context.Context, n int, size int64) error {
	c := newClient()
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := io.LimitReader(&pattern{seed: byte(i)}, size)
			resp, err := s.do(ctx, c, http.MethodPut, fmt.Sprintf("bigput-%d.bin", i), map[string]string{"Content-Type": "application/octet-stream"}, body, size)
			if err == nil {
				err = expect(resp, http.StatusCreated, http.StatusNoContent)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pattern is an endless stream cycling through a 1 MiB random block
// from an offset of its own: cheap for the client, which shares the cores.
type pattern struct {
	seed byte
	off  int
}

var patternBlock = func() []byte {
	b := make([]byte, 1<<20)
	fillRandom(b, 9)
	return b
}()

func (p *pattern) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k := copy(b[n:], patternBlock[(p.off+int(p.seed)*4099)%len(patternBlock):])
		p.off += k
		n += k
	}
	return n, nil
}
