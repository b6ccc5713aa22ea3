package runtime

import (
	"errors"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/functions/runtime/cputime"
)

// timeLimitShapes are functions that no time limit stopped in process:
// each one's work between two looks at the interrupt flag is long (a
// stack overflow caught builds a backtrace of the whole stack, and the
// catch recurses again), or there is no look at all (a built-in).
var timeLimitShapes = []struct{ name, src string }{
	{"recursion through catch", `function f(n) { try { return f(n + 1) + 1 } catch (e) { return f(n + 1) } }
export default () => f(0)`},
	{"getter", `const o = {}; Object.defineProperty(o, "x", { get() { try { return o.x + 1 } catch (e) { return o.x } } });
export default () => o.x`},
	{"proxy trap", `const p = new Proxy({}, { get(t, k, r) { try { return r[k] + 1 } catch (e) { return r[k] } } });
export default () => p.x`},
	{"regexp backtracking", `export default () => /^(a|a)*$/.test("a".repeat(100) + "b")`},
	{"sort callback", `export default () => [3, 1, 2].sort(function c(x, y) { try { return c(x, y) } catch (e) { return c(y, x) } })`},
	{"JSON reviver", `export default () => JSON.parse('{"a":1}', function r(k, v) { try { return r(k, v) } catch (e) { return r(k, v) } })`},
	{"async recursion through catch", `async function f(n) { try { return await f(n + 1) } catch (e) { return await f(n + 1) } }
export default () => f(0)`},
	// A self-feeding microtask chain may end before the limit: on a fast,
	// idle machine QuickJS stopped it after ~176,000 jobs (~0.6 s) with an
	// empty queue and no exception, so the run reports never_settled
	// rather than timeout. Either way it must stop in time and then stay
	// idle, which is what this test is for.
	{"microtasks", `export default () => { const f = () => Promise.resolve().then(f); f(); return new Promise(() => {}) }`},
	{"built-in", `export default () => Array(2 ** 32 - 1).indexOf(1)`},
}

// limitRuntime is the runtime the time limit is tested on.
var limitRuntime Runtime = Workers{}

// TestTimeLimitStopsEveryShape: each shape ends in a timeout failure
// within its limit plus a small grace, and from then on the process and
// its children use less than 10% of a core (measured for 3 s).
func TestTimeLimitStopsEveryShape(t *testing.T) {
	const limit = time.Second
	for _, c := range timeLimitShapes {
		t.Run(c.name, func(t *testing.T) {
			prog, err := Compile("javascript", c.src)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			answer := make(chan error, 1)
			go func() {
				_, err := limitRuntime.Run(t.Context(), prog, Input{}, nullHost{}, Limits{Timeout: limit})
				answer <- err
			}()
			// The answer, or a late one: what happens to the CPU then is
			// measured too.
			select {
			case err := <-answer:
				var f *Failure
				if !errors.As(err, &f) || (f.Reason != ReasonTimeout && !(c.name == "microtasks" && f.Reason == ReasonPending)) {
					t.Errorf("want a timeout, got %v", err)
				}
				if took := time.Since(start); took > limit+KillGrace+500*time.Millisecond {
					t.Errorf("answered after %s, limit %s", took, limit)
				}
			case <-time.After(limit + 2*time.Second):
				t.Errorf("no answer %s after the start, limit %s", time.Since(start), limit)
			}
			before, ok := cputime.Tree()
			time.Sleep(3 * time.Second)
			after, _ := cputime.Tree()
			if used := after - before; ok && used > 300*time.Millisecond {
				t.Errorf("%s of CPU in the 3 s after the answer, at most 10%% of a core", used)
			}
		})
	}
}

// TestOrphanWorkerEndsItself: a worker whose parent never kills it (the
// parent died) ends itself shortly after the run's limit, even in a
// built-in that cannot be interrupted.
func TestOrphanWorkerEndsItself(t *testing.T) {
	prog, err := Compile("javascript", `export default () => Array(2 ** 32 - 1).indexOf(1)`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := workers.spawn()
	if err != nil {
		t.Fatal(err)
	}
	// Without the worker's own watch, this test would wait for minutes.
	guard := time.AfterFunc(10*time.Second, p.kill)
	defer guard.Stop()
	defer p.kill()
	start := time.Now()
	if err := p.send(request{Run: &runRequest{Code: prog.Code, Input: []byte("{}"), Timeout: time.Second}}); err != nil {
		t.Fatal(err)
	}
	var m message
	err = p.dec.Decode(&m) // EOF when the worker exits
	if took := time.Since(start); err == nil || took > time.Second+3*KillGrace+time.Second {
		t.Fatalf("the worker answered %+v (%v) after %s", m, err, took)
	}
}
