package webdav

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// Concurrent uploads reuse their connections to S3: the client's pool
// keeps enough idle ones per endpoint for 8 writers, and the test S3
// server keeps connections alive as production services do (versitygw
// closes each one after its answer unless started with --keep-alive,
// which made every S3 call of the tests and davbench a new TCP connect).
func TestS3ConnectionsReused(t *testing.T) {
	c := startTestS3(t).contents(t)
	var fresh, reused atomic.Int64
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if i.Reused {
			reused.Add(1)
		} else {
			fresh.Add(1)
		}
	}})
	const writers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				body := strings.Repeat("x", 4096)
				if _, err := c.Put(ctx, fmt.Sprintf("conn-%d-%d", w, i), strings.NewReader(body), int64(len(body)), contents.PutHooks{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := fresh.Load(); n > writers {
		t.Errorf("%d PUTs opened %d connections (%d reused), want at most one per writer (%d)", writers*each, n, reused.Load(), writers)
	}
}
