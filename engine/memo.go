package engine

import (
	"sync"
	"time"

	"github.com/ontoflow/ontoflow/models"
)

// memo hands what the validate step loaded to the later steps of the same
// execution. The steps are local activities of one workflow task, so they
// run one after another in the worker that validated; without the memo each
// step re-read the execution row, the action type, the actor and the target
// (four reads per step, most of a batch item's cost).
//
// What it holds is fixed for the execution: the row's request fields never
// change after the API writes them, and authorize and run deliberately see
// the action type and actor that validation checked, not a definition
// edited in the milliseconds between steps. The run step still re-reads the
// target inside its transaction. A step that finds no entry — retried in
// another worker, or after memoTTL — loads everything again, so the memo is
// never needed for correctness.
//
// Bounds: at most memoMax entries, each the execution row and the loaded
// action type, actor and target (a request is at most --max-body). Notify,
// or the step that ends an execution, drops its entry, so in steady state
// the memo holds only the executions in flight; entries left behind (a
// worker that lost its workflow task) are swept once they are older than
// memoTTL, at most every memoTTL, and never outnumber memoMax.
type memo struct {
	mu        sync.Mutex
	entries   map[string]memoEntry
	lastSweep time.Time
}

type memoEntry struct {
	ex   *models.Execution
	in   *input
	when time.Time
}

const (
	memoTTL = 30 * time.Second
	// memoMax bounds the entries: an execution whose workflow never
	// reaches its last step (a crash) leaves one behind until a sweep.
	memoMax = 10000
)

func (m *memo) put(ex *models.Execution, in *input) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[string]memoEntry{}
	}
	if len(m.entries) >= memoMax || now.Sub(m.lastSweep) > memoTTL {
		m.lastSweep = now
		for id, e := range m.entries {
			if now.Sub(e.when) > memoTTL {
				delete(m.entries, id)
			}
		}
		if len(m.entries) >= memoMax {
			clear(m.entries)
		}
	}
	m.entries[ex.ID] = memoEntry{ex: ex, in: in, when: now}
}

func (m *memo) get(id string) (*models.Execution, *input, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[id]
	if !ok || time.Since(e.when) > memoTTL {
		return nil, nil, false
	}
	return e.ex, e.in, true
}

func (m *memo) drop(id string) {
	m.mu.Lock()
	delete(m.entries, id)
	m.mu.Unlock()
}
