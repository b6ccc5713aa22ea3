package engine

import "sync"

// settleWaiters lets an API in the worker's process learn that an execution
// reached its final state without asking Temporal: a synchronous execute
// otherwise long-polls the workflow's history for its close event, a read
// on the server's persistence for every execution.
type settleWaiters struct {
	mu      sync.Mutex
	waiters map[string][]chan struct{}
}

// Settled returns a channel closed once the execution id has finished in
// this process — succeeded and notified, or failed — and a func to call
// when no longer waiting. Register before starting the workflow: a
// settlement nobody waits for is not remembered.
func (e *Engine) Settled(id string) (<-chan struct{}, func()) {
	s := &e.waiters
	ch := make(chan struct{})
	s.mu.Lock()
	if s.waiters == nil {
		s.waiters = map[string][]chan struct{}{}
	}
	s.waiters[id] = append(s.waiters[id], ch)
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		ws := s.waiters[id]
		for i, w := range ws {
			if w == ch {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(s.waiters, id)
		} else {
			s.waiters[id] = ws
		}
	}
}

// settle wakes the waiters of id.
func (e *Engine) settle(id string) {
	s := &e.waiters
	s.mu.Lock()
	ws := s.waiters[id]
	delete(s.waiters, id)
	s.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}
