package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// TestWhatIfApplyExactlyOnce: apply runs each step for real at most once,
// on SQLite and Postgres — a step still running when the wait ends is
// reported running and apply stops there; an apply whose request is
// cancelled while a step runs does not count the step as failed; the
// next apply resumes the same execution instead of submitting another;
// and an apply that never released its claim (a crash) does not keep the
// branch "applying" forever.
func TestWhatIfApplyExactlyOnce(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			args := []string{"--outbound-allow", "127.0.0.1/32", "--execute-timeout", "1s"}
			if d == "postgres" {
				args = append(args, "--database-url", testdb.DSN(t, d))
			}
			a, dc := startDevApp(t, args)
			applyOnceSuite(t, wi{dc}, func(q string, args ...any) error { return a.DB.Exec(q, args...).Error })
		})
	}
}

type applyResult struct {
	Complete   bool      `json:"complete"`
	Executions []jsonMap `json:"executions"`
	Branch     jsonMap   `json:"branch"`
}

func applyOnceSuite(t *testing.T, c wi, exec func(q string, args ...any) error) {
	rx := newReceiver(t)
	slow := func(w http.ResponseWriter) { time.Sleep(2500 * time.Millisecond); w.WriteHeader(http.StatusOK) }
	rx.script("/slow", slow, slow)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", jsonMap{"name": "Ticket", "primary_key": "title",
		"properties": []jsonMap{{"name": "title", "type": "string", "required": true}, {"name": "status", "type": "string"}}}, nil)
	tk := c.id(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", jsonMap{"properties": jsonMap{"title": "t1"}})
	hook := c.id(http.StatusCreated, "POST", "/api/v1/ontology/actions", jsonMap{"name": "slow-sync", "object_type_id": "Ticket",
		"operation_kind": "invoke_webhook", "config": jsonMap{"operation": jsonMap{"url": rx.srv.URL + "/slow", "max_attempts": 1}}})
	status := c.id(http.StatusCreated, "POST", "/api/v1/ontology/actions", jsonMap{"name": "set-status", "object_type_id": "Ticket",
		"operation_kind": "update_object", "inputs": []jsonMap{{"name": "status", "type": "string", "required": true}},
		"config": jsonMap{"operation": jsonMap{"property_mappings": []jsonMap{{"property": "status", "input": "status"}}}}})

	t.Run("a step still running stops apply; the next apply resumes it", func(t *testing.T) {
		b := c.mustWhatIf(http.StatusCreated, hook, "", tk, nil)["branch_id"].(string)
		c.mustWhatIf(http.StatusOK, status, b, tk, jsonMap{"status": "done"})
		var res applyResult
		c.must(http.StatusOK, "POST", "/api/v1/ontology/branches/"+b+"/apply", nil, &res)
		if res.Complete || len(res.Executions) != 1 || res.Executions[0]["status"] != models.StatusRunning ||
			res.Branch["applied"] != float64(0) || res.Branch["status"] != models.BranchOpen {
			t.Fatalf("apply over a running step: %+v", res)
		}
		first := res.Executions[0]["execution_id"].(string)
		c.waitExecution(first)
		c.must(http.StatusOK, "POST", "/api/v1/ontology/branches/"+b+"/apply", nil, &res)
		if !res.Complete || len(res.Executions) != 2 || res.Executions[0]["execution_id"] != first {
			t.Fatalf("the next apply: %+v (first %s)", res, first)
		}
		if n := len(rx.seenAt("/slow")); n != 1 {
			t.Errorf("the webhook was called %d times, want 1", n)
		}
		if p := c.object(tk); p["status"] != "done" {
			t.Errorf("after apply: %v", p)
		}
	})

	t.Run("a cancelled apply leaves its step running, not failed", func(t *testing.T) {
		b := c.mustWhatIf(http.StatusCreated, hook, "", tk, nil)["branch_id"].(string)
		req, _ := http.NewRequest("POST", c.base+"/api/v1/ontology/branches/"+b+"/apply", nil)
		req.SetBasicAuth("admin", adminPassword)
		if resp, err := (&http.Client{Timeout: 300 * time.Millisecond}).Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("apply answered %d before the step finished", resp.StatusCode)
		}
		var view struct {
			Executions []jsonMap `json:"executions"`
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(view.Executions) == 0 || view.Executions[0]["applied_execution_id"] == nil {
			if time.Now().After(deadline) {
				t.Fatalf("the step's execution is not recorded: %v", view.Executions)
			}
			time.Sleep(50 * time.Millisecond)
			c.must(http.StatusOK, "GET", "/api/v1/ontology/branches/"+b, nil, &view)
		}
		ex := view.Executions[0]["applied_execution_id"].(string)
		c.waitExecution(ex)
		time.Sleep(200 * time.Millisecond) // the cancelled apply releases its claim
		var res applyResult
		c.must(http.StatusOK, "POST", "/api/v1/ontology/branches/"+b+"/apply", nil, &res)
		if !res.Complete || len(res.Executions) != 1 || res.Executions[0]["execution_id"] != ex || res.Executions[0]["status"] != models.StatusSucceeded {
			t.Fatalf("the next apply: %+v (first %s)", res, ex)
		}
		if n := len(rx.seenAt("/slow")); n != 2 {
			t.Errorf("the webhook was called %d times in all, want 2", n)
		}
	})

	t.Run("a step submitted by an apply that died is resumed by another user's apply", func(t *testing.T) {
		fast := c.id(http.StatusCreated, "POST", "/api/v1/ontology/actions", jsonMap{"name": "fast-hook", "object_type_id": "Ticket",
			"operation_kind": "invoke_webhook", "config": jsonMap{"operation": jsonMap{"url": rx.srv.URL + "/fast", "max_attempts": 1}}})
		c.must(http.StatusCreated, "POST", "/api/v1/users", jsonMap{"username": "dora", "password": "dora-password-1"}, nil)
		dora := wi{c.as("dora", "dora-password-1")}
		var opened struct {
			BranchID string `json:"branch_id"`
		}
		dora.must(http.StatusCreated, "POST", "/api/v1/ontology/actions/"+fast+"/what-if", jsonMap{"target_object_id": tk}, &opened)
		b := opened.BranchID
		var res applyResult
		dora.must(http.StatusOK, "POST", "/api/v1/ontology/branches/"+b+"/apply", nil, &res)
		first, _ := res.Executions[0]["execution_id"].(string)
		// The state of an apply that died after submitting the step and
		// before recording it anywhere: the step's execution exists (keyed
		// by the step), the branch and the step do not name it.
		if err := exec("UPDATE branch_steps SET applied_execution_id = '' WHERE branch_id = ?", b); err != nil {
			t.Fatal(err)
		}
		if err := exec("UPDATE branches SET status = ?, applied = 0 WHERE id = ?", models.BranchOpen, b); err != nil {
			t.Fatal(err)
		}
		c.must(http.StatusOK, "POST", "/api/v1/ontology/branches/"+b+"/apply", nil, &res)
		if !res.Complete || len(res.Executions) != 1 || res.Executions[0]["execution_id"] != first {
			t.Errorf("the admin's apply: %+v, want dora's execution %s resumed", res, first)
		}
		if n := len(rx.seenAt("/fast")); n != 1 {
			t.Errorf("the webhook was called %d times, want 1", n)
		}
	})

	t.Run("an abandoned claim expires", func(t *testing.T) {
		b := c.mustWhatIf(http.StatusCreated, status, "", tk, jsonMap{"status": "again"})["branch_id"].(string)
		d := c.mustWhatIf(http.StatusCreated, status, "", tk, jsonMap{"status": "other"})["branch_id"].(string)
		claim := func(id string, at time.Time) {
			if err := exec("UPDATE branches SET status = ?, updated_at = ? WHERE id = ?", models.BranchApplying, at, id); err != nil {
				t.Fatal(err)
			}
		}
		claim(b, time.Now().UTC())
		c.must(http.StatusConflict, "POST", "/api/v1/ontology/branches/"+b+"/apply", nil, nil)
		c.must(http.StatusConflict, "DELETE", "/api/v1/ontology/branches/"+b, nil, nil)
		claim(b, time.Now().UTC().Add(-time.Hour))
		claim(d, time.Now().UTC().Add(-time.Hour))
		var res applyResult
		c.must(http.StatusOK, "POST", "/api/v1/ontology/branches/"+b+"/apply", nil, &res)
		if !res.Complete {
			t.Errorf("apply after an abandoned claim: %+v", res)
		}
		c.must(http.StatusNoContent, "DELETE", "/api/v1/ontology/branches/"+d, nil, nil)
	})
}

// waitExecution waits until execution id has finished.
func (c wi) waitExecution(id string) {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var ex jsonMap
		c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+id, nil, &ex)
		if ex["finished_at"] != nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("execution %s still %v", id, ex["status"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}
