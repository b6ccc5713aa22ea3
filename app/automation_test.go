package app_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/automations"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// TestAutomations drives automations end to end over HTTP on a whole dev
// process (its in-process Temporal and the worker's dispatcher), on
// SQLite and Postgres.
func TestAutomations(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			var more []string
			if d == "postgres" {
				more = append(more, "--database-url", testdb.DSN(t, d))
			}
			a, c := startDevApp(t, more)
			e := autoEnv{a: a, c: c}
			e.define()
			t.Run("1 an object trigger fires once with its parameters", func(t *testing.T) { e.in(t).firesOnce() })
			t.Run("2 exactly once: a dispatch repeated after a lost record starts nothing new", func(t *testing.T) { e.in(t).exactlyOnce() })
			t.Run("3 a paused automation fires nothing", func(t *testing.T) { e.in(t).pausedFiresNothing() })
			t.Run("4 a self-triggering loop stops at the depth limit", func(t *testing.T) { e.in(t).loopStops() })
			t.Run("5 a schedule fires as the owner", func(t *testing.T) { e.in(t).scheduleFires() })
			t.Run("6 a disabled owner's automation fires nothing", func(t *testing.T) { e.in(t).disabledOwner() })
		})
	}
}

type autoEnv struct {
	a *app.App
	c devClient
	// onCreate is the automation of scenario 1; ticket the ticket it fired
	// for and exec the execution it started.
	onCreate, ticket, exec string
}

func (e *autoEnv) in(t *testing.T) *autoEnv {
	e.c.t = t
	return e
}

type firing struct {
	ID          uint64 `json:"id"`
	EventSeq    uint64 `json:"event_seq"`
	Status      string `json:"status"`
	Reason      string `json:"reason"`
	ExecutionID string `json:"execution_id"`
	Depth       int    `json:"depth"`
}

// define makes a Ticket type, an action that creates one and one that
// appends to its notes.
func (e *autoEnv) define() {
	c := e.c
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", jsonMap{"name": "Ticket", "primary_key": "title",
		"properties": []jsonMap{{"name": "title", "type": "string", "required": true}, {"name": "notes", "type": "string"}}}, nil)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", jsonMap{"name": "new-ticket", "object_type_id": "Ticket",
		"operation_kind": "create_object", "inputs": []jsonMap{{"name": "title", "type": "string", "required": true}},
		"config": jsonMap{"operation": jsonMap{"property_mappings": []jsonMap{{"property": "title", "input": "title"}}}}}, nil)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", jsonMap{"name": "note", "object_type_id": "Ticket",
		"operation_kind": "update_object", "inputs": []jsonMap{{"name": "notes", "type": "string", "required": true}},
		"config": jsonMap{"operation": jsonMap{"property_mappings": []jsonMap{{"property": "notes", "input": "notes"}}}}}, nil)
}

// newTicket creates a ticket through an execution (the outbox records the
// executions' edits) and returns its id.
func (e *autoEnv) newTicket(title string) string {
	var ex models.Execution
	e.c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/new-ticket/execute", jsonMap{"parameters": jsonMap{"title": title}}, &ex)
	if ex.Status != models.StatusSucceeded || len(ex.Edits.V) != 1 {
		e.c.t.Fatalf("new-ticket: %+v", ex)
	}
	return ex.Edits.V[0].ObjectID
}

func (e *autoEnv) automation(spec jsonMap) string {
	var v struct {
		ID string `json:"id"`
	}
	e.c.must(http.StatusCreated, "POST", "/api/v1/automations", spec, &v)
	return v.ID
}

func (e *autoEnv) firings(id string) []firing {
	var out struct {
		Firings []firing `json:"firings"`
	}
	e.c.must(http.StatusOK, "GET", "/api/v1/automations/"+id+"/firings", nil, &out)
	return out.Firings
}

// eventually polls cond until it holds (the dispatcher and the workflows
// run in the background), failing after a minute.
func (e *autoEnv) eventually(what string, cond func() bool) {
	e.c.t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.c.t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// drained waits until every event is dispatched.
func (e *autoEnv) drained() {
	e.c.t.Helper()
	e.eventually("every event dispatched", func() bool {
		var n int64
		if err := e.a.DB.Model(&models.AutomationEvent{}).Where("dispatched_at IS NULL").Count(&n).Error; err != nil {
			e.c.t.Fatal(err)
		}
		return n == 0
	})
}

func (e *autoEnv) execution(id string) models.Execution {
	var ex models.Execution
	e.c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+id, nil, &ex)
	return ex
}

func (e *autoEnv) settled(id string) models.Execution {
	var ex models.Execution
	e.eventually("execution "+id+" settled", func() bool {
		ex = e.execution(id)
		return ex.FinishedAt != nil
	})
	return ex
}

func (e *autoEnv) firesOnce() {
	e.onCreate = e.automation(jsonMap{"name": "note new tickets", "action_type": "note",
		"trigger":    jsonMap{"kind": "object", "object_type": "Ticket", "on": []string{"created"}},
		"parameters": jsonMap{"notes": "new: {{ object.properties.title }}"}})
	e.ticket = e.newTicket("T1")
	var fs []firing
	e.eventually("a firing", func() bool { fs = e.firings(e.onCreate); return len(fs) > 0 })
	e.drained()
	if fs = e.firings(e.onCreate); len(fs) != 1 || fs[0].Status != "started" || fs[0].ExecutionID == "" || fs[0].Depth != 1 {
		e.c.t.Fatalf("firings %+v", fs)
	}
	e.exec = fs[0].ExecutionID
	ex := e.settled(e.exec)
	if ex.Status != models.StatusSucceeded || ex.ActorName != "admin" || ex.TargetObjectID != e.ticket ||
		ex.Parameters.V["notes"] != "new: T1" || ex.AutomationID == nil || *ex.AutomationID != e.onCreate || ex.AutomationDepth != 1 {
		e.c.t.Fatalf("execution %+v", ex)
	}
	if n := e.c.notes(e.ticket); n != "new: T1" {
		e.c.t.Fatalf("notes %q", n)
	}
}

// exactlyOnce puts the first firing's event back as a crash between the
// execution's start and the firing's record leaves it: undispatched, no
// firing. The dispatcher's second pass starts with the same idempotency
// key and finds the same execution.
func (e *autoEnv) exactlyOnce() {
	fs := e.firings(e.onCreate)
	db := e.a.DB
	if err := db.Where("id = ?", fs[0].ID).Delete(&models.AutomationFiring{}).Error; err != nil {
		e.c.t.Fatal(err)
	}
	if err := db.Model(&models.AutomationEvent{}).Where("seq = ?", fs[0].EventSeq).Update("dispatched_at", nil).Error; err != nil {
		e.c.t.Fatal(err)
	}
	e.eventually("the firing recorded again", func() bool { return len(e.firings(e.onCreate)) == 1 })
	again := e.firings(e.onCreate)[0]
	if again.ExecutionID != e.exec || again.EventSeq != fs[0].EventSeq {
		e.c.t.Fatalf("second dispatch %+v, want execution %s", again, e.exec)
	}
	var n int64
	if err := db.Model(&models.Execution{}).Where("automation_id = ?", e.onCreate).Count(&n).Error; err != nil || n != 1 {
		e.c.t.Fatalf("%d executions of the automation (%v), want 1", n, err)
	}
}

func (e *autoEnv) pausedFiresNothing() {
	e.c.must(http.StatusOK, "POST", "/api/v1/automations/"+e.onCreate+"/pause", nil, nil)
	t2 := e.newTicket("T2")
	e.drained()
	if fs := e.firings(e.onCreate); len(fs) != 1 {
		e.c.t.Fatalf("a paused automation fired: %+v", fs)
	}
	if n := e.c.notes(t2); n != "" {
		e.c.t.Fatalf("notes %q", n)
	}
	e.c.must(http.StatusNoContent, "DELETE", "/api/v1/automations/"+e.onCreate, nil, nil)
}

// loopStops: an automation whose action changes what triggers it fires
// for the person's edit and for its own, until the chain is
// --automation-max-depth (3) deep; the next firing is recorded skipped.
func (e *autoEnv) loopStops() {
	loop := e.automation(jsonMap{"name": "append", "action_type": "note",
		"trigger":    jsonMap{"kind": "object", "object_type": "Ticket", "on": []string{"updated"}},
		"parameters": jsonMap{"notes": "{{ object.properties.notes }}+"}})
	var ex models.Execution
	e.c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/note/execute",
		jsonMap{"target_object_id": e.ticket, "parameters": jsonMap{"notes": "loop"}}, &ex)
	var fs []firing
	e.eventually("the skip at the depth limit", func() bool {
		fs = e.firings(loop)
		return len(fs) > 0 && fs[0].Status == "skipped"
	})
	e.drained()
	fs = e.firings(loop)
	if len(fs) != 4 || fs[0].Depth != 4 || !strings.Contains(fs[0].Reason, "depth") {
		e.c.t.Fatalf("firings %+v", fs)
	}
	for i, f := range fs[1:] {
		if f.Status != "started" || f.Depth != 3-i {
			e.c.t.Fatalf("firing %+v, want started at depth %d", f, 3-i)
		}
		e.settled(f.ExecutionID)
	}
	if n := e.c.notes(e.ticket); n != "loop+++" {
		e.c.t.Fatalf("notes %q, want loop+++", n)
	}
	e.c.must(http.StatusNoContent, "DELETE", "/api/v1/automations/"+loop, nil, nil)
}

// scheduleFires: a schedule trigger is a Temporal Schedule, kept with the
// definition (paused with it, deleted with it); a run triggered now
// starts the action as the owner.
func (e *autoEnv) scheduleFires() {
	ctx := context.Background()
	id := e.automation(jsonMap{"name": "hourly ticket", "action_type": "new-ticket",
		"trigger":    jsonMap{"kind": "schedule", "interval": "1h"},
		"parameters": jsonMap{"title": "scheduled {{ automation.name }}"}})
	h := e.a.Temporal.ScheduleClient().GetHandle(ctx, automations.ScheduleID(id))
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		e.c.t.Fatal(err)
	}
	var fs []firing
	e.eventually("the scheduled firing", func() bool { fs = e.firings(id); return len(fs) > 0 })
	ex := e.settled(fs[0].ExecutionID)
	if fs[0].Status != "started" || ex.Status != models.StatusSucceeded || ex.ActorName != "admin" ||
		ex.Parameters.V["title"] != "scheduled hourly ticket" {
		e.c.t.Fatalf("firing %+v, execution %+v", fs[0], ex)
	}
	e.c.must(http.StatusOK, "POST", "/api/v1/automations/"+id+"/pause", nil, nil)
	desc, err := h.Describe(ctx)
	if err != nil || !desc.Schedule.State.Paused {
		e.c.t.Fatalf("schedule after pause: %+v, %v", desc, err)
	}
	e.c.must(http.StatusNoContent, "DELETE", "/api/v1/automations/"+id, nil, nil)
	e.eventually("the schedule gone with its automation", func() bool {
		var nf *serviceerror.NotFound
		_, err := h.Describe(ctx)
		return errors.As(err, &nf)
	})
}

// disabledOwner: an event matching the automation of a user who has
// since been disabled starts nothing; the firing is recorded skipped.
func (e *autoEnv) disabledOwner() {
	var bob struct {
		ID string `json:"id"`
	}
	e.c.must(http.StatusCreated, "POST", "/api/v1/users", jsonMap{"username": "bob", "password": "bob-password-1"}, &bob)
	var v struct {
		ID string `json:"id"`
	}
	e.c.as("bob", "bob-password-1").must(http.StatusCreated, "POST", "/api/v1/automations", jsonMap{"name": "bob's",
		"action_type": "note", "trigger": jsonMap{"kind": "object", "object_type": "Ticket", "on": []string{"updated"}},
		"parameters": jsonMap{"notes": "bob was here"}}, &v)
	e.c.must(http.StatusOK, "PATCH", "/api/v1/users/"+bob.ID, jsonMap{"disabled": true}, nil)
	e.c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/note/execute",
		jsonMap{"target_object_id": e.ticket, "parameters": jsonMap{"notes": "by admin"}}, nil)
	e.drained()
	var fs []models.AutomationFiring
	if err := e.a.DB.Where("automation_id = ?", v.ID).Find(&fs).Error; err != nil {
		e.c.t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Status != models.FiringSkipped || fs[0].ExecutionID != nil || !strings.Contains(fs[0].Reason, "disabled") {
		e.c.t.Fatalf("firings %+v", fs)
	}
	if n := e.c.notes(e.ticket); n != "by admin" {
		e.c.t.Fatalf("notes %q", n)
	}
}
