package main

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// dedupReceiver is a webhook receiver on loopback that deduplicates by
// Idempotency-Key, as the docs ask receivers to: it fails the first
// failures requests, then accepts; an accepted key answers 200 again
// without counting a second delivery.
type dedupReceiver struct {
	mu        sync.Mutex
	failures  int
	requests  int
	keys      map[string]bool // accepted keys
	delivered int             // effective deliveries
	seenKeys  map[string]int  // requests per key
}

func (d *dedupReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	d.requests++
	d.seenKeys[key]++
	switch {
	case d.keys[key]:
		w.WriteHeader(http.StatusOK) // a duplicate: acknowledged, not applied
	case d.requests <= d.failures:
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		d.keys[key] = true
		d.delivered++
		w.WriteHeader(http.StatusOK)
	}
}

func (d *dedupReceiver) snapshot() (requests, delivered int, keys map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys = map[string]int{}
	for k, v := range d.seenKeys {
		keys[k] = v
	}
	return d.requests, d.delivered, keys
}

// TestWebhookSurvivesKilledWorker kills the `dev` process (its worker)
// while a webhook's retries are under way: after a restart on the same
// data directory the action finishes succeeded, every attempt carried the
// same key, and the receiver counts one effective delivery. On SQLite and,
// with TEST_DATABASE_URL, on Postgres.
func TestWebhookSurvivesKilledWorker(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			args := append(devArgs(t.TempDir()), "--outbound-allow", "127.0.0.1/32")
			if d == "postgres" {
				args = append(args, "--database-url", testdb.DSN(t, d))
			}
			webhookKill(t, args)
		})
	}
}

func webhookKill(t *testing.T, args []string) {
	rx := &dedupReceiver{failures: 2, keys: map[string]bool{}, seenKeys: map[string]int{}}
	srv := httptest.NewServer(rx)
	defer srv.Close()
	p := start(t, nil, args...)
	admin := client{t: t, base: p.APIURL, user: "admin", pass: p.AdminPassword}
	var action struct {
		ID string `json:"id"`
	}
	admin.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "notify-crm",
		"operation_kind": "invoke_webhook", "config": map[string]any{"operation": map[string]any{
			"url": srv.URL + "/crm", "max_attempts": 6}}}).json(t, &action)
	var ex struct {
		ID string `json:"id"`
	}
	admin.must(http.StatusAccepted, "POST", "/api/v1/ontology/actions/"+action.ID+"/execute?async=true", map[string]any{}).json(t, &ex)

	// The first attempt failed; the retries are under way: crash.
	waitFor(t, time.Minute, func() bool { n, _, _ := rx.snapshot(); return n >= 1 })
	p.kill()

	p2 := start(t, nil, args...)
	admin.base = p2.APIURL
	var final struct {
		Status string `json:"status"`
	}
	waitFor(t, 3*time.Minute, func() bool {
		admin.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+ex.ID, nil).json(t, &final)
		return final.Status == "succeeded" || final.Status == "failed"
	})
	requests, delivered, keys := rx.snapshot()
	if final.Status != "succeeded" || delivered != 1 || len(keys) != 1 || keys[ex.ID] != requests || requests < 3 {
		t.Errorf("status %s, %d requests, %d effective deliveries, keys %v (want the execution id %s on every attempt)",
			final.Status, requests, delivered, keys, ex.ID)
	}
	p2.stop()
}
