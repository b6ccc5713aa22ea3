package auth

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/ontoflow/ontoflow/apperr"
)

// throttle refuses authentication attempts per key (a username or a client
// address) once the key is over its limit, instead of slowing them down:
// a delay alone lets parallel attempts through.
//
//   - A key with n consecutive failures, n >= its limit, is refused until
//     a window after its last failure: 100ms, doubling per further
//     failure, capped at max. A refusal carries that wait (Retry-After).
//     The limit is after for a username and addrAfter for an address
//     (higher: one address may be a NAT or proxy in front of many users).
//   - Attempts that need a password verification are admitted, not just
//     checked: at most limit-n of them may be in flight for a key below the
//     limit and one at a time for a key over it, so a burst of parallel
//     guesses cannot outrun the count (identical credentials are verified
//     once, see Service.verify, so a client's parallel requests are one
//     attempt).
//   - A success clears the username's counter only; the address keeps
//     its failures, so one valid account does not reset the address limit.
//   - A key quiet for ten minutes starts afresh, and the table holds at
//     most size keys, evicting the least recently used.
//
// Process-local on purpose: it is a brake, not an account lock-out, so
// replicas need not agree.
type throttle struct {
	after     int // failures of a username ("u:...") before refusals
	addrAfter int // failures of an address ("a:...") before refusals
	max       time.Duration
	quiet     time.Duration
	now       func() time.Time

	mu   sync.Mutex
	keys *simplelru.LRU[string, *failures]
}

type failures struct {
	limit    int       // failures before refusals
	n        int       // consecutive failures
	last     time.Time // of the last failure
	inflight int       // admitted attempts not yet done
}

const throttleSize = 100000

func newThrottle(after, addrAfter int, max time.Duration, size int) *throttle {
	if size <= 0 {
		size = throttleSize
	}
	keys, err := simplelru.NewLRU[string, *failures](size, nil)
	if err != nil {
		panic(err) // only for size <= 0
	}
	return &throttle{after: after, addrAfter: addrAfter, max: max, quiet: 10 * time.Minute, now: time.Now, keys: keys}
}

// add starts k's state. Caller holds mu.
func (t *throttle) add(k string, now time.Time) *failures {
	f := &failures{limit: t.after, last: now}
	if strings.HasPrefix(k, "a:") {
		f.limit = t.addrAfter
	}
	t.keys.Add(k, f)
	return f
}

// delay is how long a key with n failures and limit is refused after its
// last failure.
func (t *throttle) delay(limit, n int) time.Duration {
	if n < limit {
		return 0
	}
	d := 100 * time.Millisecond << min(n-limit, 20)
	return min(d, t.max)
}

// entry returns k's state (nil when it has none), forgetting it once it
// has been quiet long enough. Caller holds mu.
func (t *throttle) entry(k string, now time.Time) *failures {
	f, ok := t.keys.Get(k)
	if !ok {
		return nil
	}
	if f.inflight == 0 && now.Sub(f.last) > t.quiet {
		t.keys.Remove(k)
		return nil
	}
	return f
}

// wait is how long f refuses attempts from now; 0 admits one.
func (t *throttle) wait(f *failures, now time.Time) time.Duration {
	if f == nil {
		return 0
	}
	if w := f.last.Add(t.delay(f.limit, f.n)).Sub(now); w > 0 {
		return w
	}
	budget := max(f.limit-f.n, 1)
	if f.inflight >= budget {
		// Refused until the attempts in flight are decided; they take a
		// password verification (tens of milliseconds).
		return max(t.delay(f.limit, f.n+f.inflight), 100*time.Millisecond)
	}
	return 0
}

// check reports how long the worst of keys refuses attempts (0: none).
func (t *throttle) check(keys ...string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var worst time.Duration
	for _, k := range keys {
		worst = max(worst, t.wait(t.entry(k, now), now))
	}
	return worst
}

// admit is check that, when no key refuses, counts one attempt in flight
// on every key until done.
func (t *throttle) admit(keys ...string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, k := range keys {
		if w := t.wait(t.entry(k, now), now); w > 0 {
			return w
		}
	}
	for _, k := range keys {
		f := t.entry(k, now)
		if f == nil {
			f = t.add(k, now)
		}
		f.inflight++
	}
	return 0
}

// done ends an attempt admitted on keys (admitted false: one that was
// only checked): a failure counts on every key, a success clears the
// counter of clear ("" = none).
func (t *throttle) done(admitted, failed bool, clear string, keys ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, k := range keys {
		f, ok := t.keys.Get(k)
		if !ok {
			if !failed {
				continue
			}
			f = t.add(k, now)
		}
		if admitted && f.inflight > 0 {
			f.inflight--
		}
		switch {
		case failed:
			f.n++
			f.last = now
		case k == clear:
			f.n = 0
		}
		if f.n == 0 && f.inflight == 0 {
			t.keys.Remove(k)
		}
	}
}

// len is the number of keys held (tests).
func (t *throttle) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keys.Len()
}

// ThrottledError refuses an authentication attempt while its username or
// address is over the failure limit: apperr.TooManyRequests (429), with
// the time after which to retry.
type ThrottledError struct {
	RetryAfter time.Duration
	err        *apperr.Error
}

func newThrottledError(wait time.Duration) *ThrottledError {
	return &ThrottledError{RetryAfter: wait,
		err: apperr.New(apperr.TooManyRequests, "too many failed authentication attempts; retry later")}
}

func (e *ThrottledError) Error() string { return e.err.Error() }

// Unwrap exposes the *apperr.Error, so the API renders it as 429.
func (e *ThrottledError) Unwrap() error { return e.err }

// RetryAfterSeconds is the value of a Retry-After header: whole seconds,
// at least 1.
func (e *ThrottledError) RetryAfterSeconds() int {
	s := int((e.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// AsThrottled returns the throttle refusal in err's chain, if any.
func AsThrottled(err error) (*ThrottledError, bool) {
	var te *ThrottledError
	ok := errors.As(err, &te)
	return te, ok
}
