package faultproxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/devtest"
	"github.com/ontoflow/ontoflow/internal/harness/faultproxy"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// faultScale stretches every fault and the load around it: 1 is the short
// setting CI runs (about a minute); by hand, e.g. -faultproxy.scale=10.
var faultScale = flag.Int("faultproxy.scale", 1, "multiply fault durations and client counts of TestPostgresFaultMatrix")

const matrixPassword = "fault-matrix-password-1"

// matrixClient executes one action through the HTTP API as the admin.
type matrixClient struct {
	base string
	http *http.Client
}

func (c matrixClient) call(method, path, key string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.SetBasicAuth("admin", matrixPassword)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// outcome is what clients saw over the whole run.
type outcome struct {
	mu        sync.Mutex
	statuses  map[int]int // HTTP status -> count, every attempt
	transport int         // attempts that ended without a response (timeout, reset)
	lost      []string    // keys never accepted before the client gave up
	noRetry   int         // 503 answers without Retry-After
}

func (o *outcome) saw(status int, retryAfter bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.transport++
		return
	}
	o.statuses[status]++
	if status == http.StatusServiceUnavailable && !retryAfter {
		o.noRetry++
	}
}

// TestPostgresFaultMatrix: dev on Postgres reached through a fault proxy,
// while clients execute a keyed create action and retry what fails. The
// proxy adds 200 ms of latency, then resets every connection, then drops
// all traffic (blackhole), then closes every connection and refuses new
// ones for 10 s (Postgres down, then up again). After it: every key the clients sent ends as
// exactly one execution, final and succeeded, and one object (the type's
// primary key would refuse a second); no answer was a bare 500; a new
// execution succeeds within 10 s of the last fault's end. Postgres only
// (the faults are on its wire); needs TEST_DATABASE_URL.
func TestPostgresFaultMatrix(t *testing.T) {
	if os.Getenv("TEST_DATABASE_URL") == "" {
		t.Skip("TEST_DATABASE_URL not set: the fault matrix runs on Postgres")
	}
	ctx := context.Background()
	scale := time.Duration(*faultScale)
	dsn, err := url.Parse(testdb.DSN(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start("postgres", dsn.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	dsn.Host = proxy.Addr()
	a := devtest.Start(t, matrixPassword, []string{"--database-url", dsn.String()}, nil)
	c := matrixClient{base: a.APIURL, http: &http.Client{Timeout: 15 * time.Second}}
	actionID := matrixSetup(t, c)

	out := &outcome{statuses: map[int]int{}}
	var keys sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 * *faultScale {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%d-%d", w, i)
				keys.Store(key, true)
				if !executeUntilAccepted(c, actionID, key, out, 90*time.Second) {
					out.mu.Lock()
					out.lost = append(out.lost, key)
					out.mu.Unlock()
				}
			}
		}()
	}

	phase := func(name string, d time.Duration, inject func(context.Context) error) {
		t.Logf("fault %s for %v", name, d)
		if err := proxy.For(ctx, d, inject); err != nil {
			t.Fatalf("fault %s: %v", name, err)
		}
		time.Sleep(2 * time.Second) // clean traffic between faults
	}
	time.Sleep(2 * time.Second)
	phase("latency 200ms", 3*scale*time.Second, func(ctx context.Context) error { return proxy.Latency(ctx, 200*time.Millisecond) })
	phase("reset", 1*scale*time.Second, proxy.Reset)
	phase("blackhole", 3*scale*time.Second, proxy.Blackhole)
	// Postgres restarted, as the wire sees it (faultproxy.Down): the
	// shared test server itself is not restarted.
	phase("postgres down", 10*scale*time.Second, proxy.Down)
	if d := recovery(c, actionID, 30*time.Second); d > 10*time.Second {
		t.Errorf("recovery after the last fault took %v, want <= 10s", d)
	} else {
		t.Logf("recovered %v after the last fault ended", d)
	}
	close(stop)
	wg.Wait()

	t.Logf("client attempts: statuses %v, transport errors %d", out.statuses, out.transport)
	if len(out.lost) > 0 {
		t.Errorf("%d keys never accepted (first %s)", len(out.lost), out.lost[0])
	}
	if n := out.statuses[http.StatusInternalServerError]; n > 0 {
		t.Errorf("%d answers were a bare 500", n)
	}
	if out.noRetry > 0 {
		t.Errorf("%d answers were 503 without Retry-After", out.noRetry)
	}
	// Every accepted execution reaches a final status: wait for the tail.
	sent := 0
	keys.Range(func(any, any) bool { sent++; return true })
	deadline := time.Now().Add(60 * time.Second)
	var open int64
	for {
		if err := a.DB.Model(&models.Execution{}).Where("idempotency_key IS NOT NULL AND status IN ?",
			[]string{models.StatusQueued, models.StatusRunning}).Count(&open).Error; err != nil {
			t.Fatal(err)
		}
		if open == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	var rows []models.Execution
	if err := a.DB.Where("idempotency_key IS NOT NULL").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	perKey := map[string]int{}
	for _, r := range rows {
		perKey[*r.IdempotencyKey]++
		if r.Status != models.StatusSucceeded {
			t.Errorf("execution %s (key %s): %s %s, want succeeded", r.ID, *r.IdempotencyKey, r.Status, r.ErrorCode)
		}
	}
	var objects int64
	if err := a.DB.Model(&models.Object{}).Count(&objects).Error; err != nil {
		t.Fatal(err)
	}
	missing := 0
	keys.Range(func(k, _ any) bool {
		if perKey[k.(string)] == 0 {
			missing++
		}
		return true
	})
	for k, n := range perKey {
		if n > 1 {
			t.Errorf("key %s: %d executions, want 1", k, n)
		}
	}
	t.Logf("%d keys sent, %d executions, %d objects", sent, len(rows), objects)
	// A key whose every attempt died in transit may never have reached
	// the server: only keys some client saw accepted must exist, and those
	// are all but the lost ones (already reported).
	if missing > len(out.lost) {
		t.Errorf("%d keys have no execution, %d of them were answered as accepted", missing, missing-len(out.lost))
	}
	if int(objects) != len(rows) {
		t.Errorf("%d objects for %d executions, want one each (lost or duplicated edit)", objects, len(rows))
	}
}

// matrixSetup creates the object type (title is its primary key, so a
// duplicated create cannot succeed twice) and the create action.
func matrixSetup(t *testing.T, c matrixClient) string {
	t.Helper()
	st, b, err := c.call("POST", "/api/v1/ontology/types", "", map[string]any{"name": "Note", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}}})
	if err != nil || st != http.StatusCreated {
		t.Fatalf("create type: %d %s %v", st, b, err)
	}
	st, b, err = c.call("POST", "/api/v1/ontology/actions", "", map[string]any{"name": "note", "object_type_id": "Note",
		"operation_kind": "create_object", "inputs": []map[string]any{{"name": "title", "type": "string", "required": true}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "title", "input": "title"}}}}})
	if err != nil || st != http.StatusCreated {
		t.Fatalf("create action: %d %s %v", st, b, err)
	}
	var act struct{ ID string }
	if err := json.Unmarshal(b, &act); err != nil {
		t.Fatal(err)
	}
	return act.ID
}

// executeUntilAccepted executes the action for key, retrying with the same
// idempotency key whatever fails, until an answer of 200 or until giveUp.
func executeUntilAccepted(c matrixClient, actionID, key string, out *outcome, giveUp time.Duration) bool {
	end := time.Now().Add(giveUp)
	for time.Now().Before(end) {
		st, _, retryAfter, err := c.execute(actionID, key)
		out.saw(st, retryAfter, err)
		if err == nil && st == http.StatusOK {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

func (c matrixClient) execute(actionID, key string) (int, []byte, bool, error) {
	b, _ := json.Marshal(map[string]any{"parameters": map[string]any{"title": key}})
	req, err := http.NewRequest("POST", c.base+"/api/v1/ontology/actions/"+actionID+"/execute", bytes.NewReader(b))
	if err != nil {
		return 0, nil, false, err
	}
	req.SetBasicAuth("admin", matrixPassword)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, resp.Header.Get("Retry-After") != "", err
}

// recovery is how long after now a fresh execution first succeeds.
func recovery(c matrixClient, actionID string, giveUp time.Duration) time.Duration {
	start := time.Now()
	for i := 0; time.Since(start) < giveUp; i++ {
		st, _, _, err := c.execute(actionID, fmt.Sprintf("recovery-%d", i))
		if err == nil && st == http.StatusOK {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return giveUp
}
