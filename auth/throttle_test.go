package auth

import (
	"fmt"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// newTestThrottle has the same limit for usernames and addresses.
func newTestThrottle(after int, max time.Duration, size int) (*throttle, *fakeClock) {
	th := newThrottle(after, after, max, size)
	c := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	th.now = c.now
	return th, c
}

// Past the threshold a key is refused for a window after its last failure
// (100ms doubling up to the cap); other keys are untouched, an address
// shared by two usernames is refused for both.
func TestThrottleRefusesOverLimit(t *testing.T) {
	th, clock := newTestThrottle(3, 400*time.Millisecond, 0)
	for i := 0; i < 3; i++ {
		if w := th.check("u:alice"); w != 0 {
			t.Fatalf("refused after %d failures (wait %s)", i, w)
		}
		th.done(false, true, "", "u:alice", "a:10.0.0.1")
	}
	if w := th.check("u:bob", "a:10.0.0.1"); w == 0 {
		t.Errorf("the failing address is not refused for another user")
	}
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond} {
		if w := th.check("u:alice"); w != want {
			t.Fatalf("after %d failures: wait %s, want %s", 3+i, w, want)
		}
		clock.advance(want - time.Millisecond)
		if w := th.check("u:alice"); w != time.Millisecond {
			t.Fatalf("after %d failures, 1ms before the window ends: wait %s", 3+i, w)
		}
		clock.advance(time.Millisecond)
		if w := th.admit("u:alice"); w != 0 {
			t.Fatalf("after %d failures, the window over: still refused (%s)", 3+i, w)
		}
		th.done(true, true, "", "u:alice")
	}
	if w := th.check("u:bob"); w != 0 {
		t.Errorf("unrelated user refused for %s", w)
	}
	// Ten quiet minutes forget a key.
	clock.advance(11 * time.Minute)
	if w := th.check("u:alice", "a:10.0.0.1"); w != 0 {
		t.Errorf("refused after ten quiet minutes (%s)", w)
	}
}

// A success clears the username's counter only: the address keeps its
// failures, so one valid account cannot reset the address limit.
func TestThrottleSuccessClearsOnlyUsername(t *testing.T) {
	th, _ := newTestThrottle(3, time.Hour, 0)
	th.done(false, true, "", "u:bob", "a:1.2.3.4")
	th.done(false, true, "", "u:bob", "a:1.2.3.4")
	th.done(false, false, "u:alice", "u:alice", "a:1.2.3.4") // alice logs in from the same address
	th.done(false, true, "", "u:carol", "a:1.2.3.4")
	if w := th.check("u:alice", "a:1.2.3.4"); w == 0 {
		t.Fatal("the address is not refused after 3 failures with a success in between")
	}
	th.done(false, true, "", "u:dave", "a:5.6.7.8")
	th.done(false, true, "", "u:dave", "a:5.6.7.8")
	th.done(false, false, "u:dave", "u:dave", "a:5.6.7.8")
	th.done(false, true, "", "u:dave", "a:9.9.9.9")
	if w := th.check("u:dave"); w != 0 {
		t.Fatalf("dave's counter was not cleared by his success (wait %s)", w)
	}
}

// Admitted attempts count while in flight: below the limit at most
// after-n at once, over it one at a time; so parallel attempts cannot all
// be verified before the first failures are counted.
func TestThrottleInFlight(t *testing.T) {
	th, clock := newTestThrottle(3, time.Hour, 0)
	for i := 0; i < 3; i++ {
		if w := th.admit("u:x", "a:y"); w != 0 {
			t.Fatalf("attempt %d refused", i)
		}
	}
	if w := th.admit("u:x", "a:z"); w == 0 {
		t.Fatal("a fourth parallel attempt was admitted below a limit of 3")
	}
	if w := th.admit("u:other", "a:y"); w == 0 {
		t.Fatal("a fourth parallel attempt from the address was admitted")
	}
	for i := 0; i < 3; i++ {
		th.done(true, true, "", "u:x", "a:y")
	}
	clock.advance(time.Second) // past the 100ms window of 3 failures
	if w := th.admit("u:x"); w != 0 {
		t.Fatalf("refused after the window (%s)", w)
	}
	if w := th.admit("u:x"); w == 0 {
		t.Fatal("over the limit, a second attempt was admitted while one is in flight")
	}
	th.done(true, false, "u:x", "u:x")
	if w := th.admit("u:x"); w != 0 {
		t.Fatalf("refused after a success (%s)", w)
	}
}

// The table is bounded: past its size the least recently used keys go.
func TestThrottleBoundedLRU(t *testing.T) {
	th, _ := newTestThrottle(1, time.Hour, 3)
	for i := 0; i < 10; i++ {
		th.done(false, true, "", fmt.Sprintf("a:%d", i))
		if i == 0 {
			continue
		}
		th.check("a:0") // keep a:0 recently used
	}
	if n := th.len(); n != 3 {
		t.Fatalf("table holds %d keys, want 3", n)
	}
	if w := th.check("a:0"); w == 0 {
		t.Error("the most recently used key was evicted")
	}
	if w := th.check("a:9"); w == 0 {
		t.Error("the newest key was evicted")
	}
	if w := th.check("a:1"); w != 0 {
		t.Error("the least recently used key was kept")
	}
}

func TestThrottledErrorRetryAfter(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {30 * time.Second, 30}} {
		if got := newThrottledError(c.d).RetryAfterSeconds(); got != c.want {
			t.Errorf("Retry-After for %s = %d, want %d", c.d, got, c.want)
		}
	}
}

// An address has its own, higher limit than a username.
func TestThrottleAddressLimit(t *testing.T) {
	th := newThrottle(2, 4, time.Hour, 0)
	th.now = (&fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}).now
	for i := 0; i < 3; i++ {
		th.done(false, true, "", fmt.Sprintf("u:%d", i), "a:x")
	}
	th.done(false, true, "", "u:0")
	if w := th.check("u:0"); w == 0 {
		t.Error("a username is not refused after 2 failures")
	}
	if w := th.check("a:x"); w != 0 {
		t.Errorf("an address is refused after 3 failures with a limit of 4 (%s)", w)
	}
	th.done(false, true, "", "u:9", "a:x")
	if w := th.check("a:x"); w == 0 {
		t.Error("an address is not refused after 4 failures")
	}
}
