package auth

import (
	"context"
	"sync"
	"time"
)

// throttle slows down repeated failures per key (a username or an address):
// after `after` consecutive failures each further attempt on that key waits
// 100ms, doubling up to max. A success clears the username's counter. Counts
// decay after ten quiet minutes. Process-local on purpose: it is a brake, not
// an account lock-out, so replicas need not agree.
type throttle struct {
	after int
	max   time.Duration

	mu   sync.Mutex
	keys map[string]*failures
}

type failures struct {
	n    int
	last time.Time
}

func newThrottle(after int, max time.Duration) *throttle {
	return &throttle{after: after, max: max, keys: map[string]*failures{}}
}

func (t *throttle) delay(keys ...string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	worst := 0
	now := time.Now()
	for _, k := range keys {
		if f, ok := t.keys[k]; ok {
			if now.Sub(f.last) > 10*time.Minute {
				delete(t.keys, k)
				continue
			}
			if f.n > worst {
				worst = f.n
			}
		}
	}
	if worst < t.after {
		return 0
	}
	d := 100 * time.Millisecond << min(worst-t.after, 10)
	return min(d, t.max)
}

func (t *throttle) wait(ctx context.Context, keys ...string) {
	d := t.delay(keys...)
	if d == 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

func (t *throttle) fail(keys ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.keys) > 100000 {
		t.keys = map[string]*failures{}
	}
	for _, k := range keys {
		f := t.keys[k]
		if f == nil {
			f = &failures{}
			t.keys[k] = f
		}
		f.n++
		f.last = time.Now()
	}
}

func (t *throttle) succeed(keys ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		delete(t.keys, k)
	}
}
