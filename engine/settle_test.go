package engine

import (
	"context"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/models"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Waiters of one execution are woken together; a waiter that gave up is
// forgotten, and a settlement nobody waits for leaves nothing behind.
func TestSettled(t *testing.T) {
	var e Engine
	a, stopA := e.Settled("x")
	b, stopB := e.Settled("x")
	other, stopOther := e.Settled("y")
	defer stopOther()
	if closed(a) || closed(b) {
		t.Fatal("woken before settle")
	}
	e.settle("x")
	if !closed(a) || !closed(b) || closed(other) {
		t.Fatalf("after settle(x): a %v, b %v, y %v", closed(a), closed(b), closed(other))
	}
	stopA() // after the settlement: harmless
	stopB()
	gone, stopGone := e.Settled("z")
	stopGone()
	e.settle("z") // no waiter left: nothing to wake, no panic
	if closed(gone) {
		t.Fatal("a waiter that stopped was woken")
	}
	e.settle("nobody")
	if len(e.waiters.waiters) != 1 { // only y
		t.Fatalf("waiters left: %v", e.waiters.waiters)
	}
}

// The memo serves an entry until its TTL, never past memoMax entries, and
// drop forgets it.
func TestMemo(t *testing.T) {
	var m memo
	m.put(&models.Execution{ID: "a"}, &input{})
	if _, _, ok := m.get("a"); !ok {
		t.Fatal("fresh entry not served")
	}
	m.drop("a")
	if _, _, ok := m.get("a"); ok {
		t.Fatal("dropped entry served")
	}
	m.put(&models.Execution{ID: "old"}, &input{})
	m.entries["old"] = memoEntry{ex: &models.Execution{ID: "old"}, in: &input{}, when: time.Now().Add(-memoTTL - time.Second)}
	if _, _, ok := m.get("old"); ok {
		t.Fatal("entry past its TTL served")
	}
	for i := 0; i < memoMax+10; i++ {
		m.put(&models.Execution{ID: string(rune(i + 1000))}, &input{})
	}
	if n := len(m.entries); n > memoMax {
		t.Fatalf("memo holds %d entries, bound %d", n, memoMax)
	}
}

// A step's context names its workflow run; only the execution's own
// workflow records its run id, and only once.
func TestRunIDFor(t *testing.T) {
	ctx := WithWorkflowRun(context.Background(), "action/a/1", "run-1")
	if got := runIDFor(ctx, &models.Execution{WorkflowID: "action/a/1"}); got != "run-1" {
		t.Errorf("own workflow: %q", got)
	}
	if got := runIDFor(ctx, &models.Execution{WorkflowID: "action/a/2"}); got != "" {
		t.Errorf("a chunk running an item recorded its run on the item: %q", got)
	}
	if got := runIDFor(ctx, &models.Execution{WorkflowID: "action/a/1", RunID: "run-0"}); got != "" {
		t.Errorf("run id overwritten: %q", got)
	}
	if got := runIDFor(context.Background(), &models.Execution{WorkflowID: "action/a/1"}); got != "" {
		t.Errorf("no run in the context: %q", got)
	}
}
