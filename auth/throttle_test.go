package auth

import (
	"testing"
	"time"
)

// Failures beyond the threshold delay further attempts on the same key,
// doubling up to the cap; other keys are untouched and a success clears the
// counter.
func TestThrottleDelays(t *testing.T) {
	th := newThrottle(3, 400*time.Millisecond)
	for i := 0; i < 3; i++ {
		if d := th.delay("u:alice"); d != 0 {
			t.Fatalf("delay after %d failures = %s, want 0", i, d)
		}
		th.fail("u:alice", "a:10.0.0.1")
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond}
	for i, w := range want {
		if d := th.delay("u:alice"); d != w {
			t.Errorf("delay after %d failures = %s, want %s", 3+i, d, w)
		}
		th.fail("u:alice")
	}
	if d := th.delay("u:bob"); d != 0 {
		t.Errorf("unrelated user delayed %s", d)
	}
	if d := th.delay("u:bob", "a:10.0.0.1"); d == 0 {
		t.Errorf("the failing address is not slowed down for another user")
	}
	th.succeed("u:alice")
	if d := th.delay("u:alice"); d != 0 {
		t.Errorf("delay after success = %s", d)
	}
}
