package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/internal/harness/devtest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// appendNote is an operation kind that exists only in this file: it
// appends the input "note" to a string property of the target. Its whole
// registration is app.ExtraKinds(appendNote{}) — the proof that adding a
// kind touches its own file and one registration line.
type appendNote struct{}

type appendNoteConfig struct {
	Property string `json:"property"`
}

func (appendNote) Name() string          { return "append_note" }
func (appendNote) NeedsObjectType() bool { return true }
func (appendNote) HasTarget(string) bool { return true }
func (appendNote) NewConfig() any        { return &appendNoteConfig{} }
func (appendNote) References(any) domain.References {
	return domain.References{}
}

func (appendNote) CheckConfig(_ context.Context, s *domain.KindScope, cfg any) error {
	if cfg.(*appendNoteConfig).Property == "" {
		return fmt.Errorf("%sproperty is required", s.Field)
	}
	return nil
}

func (k appendNote) edit(op *engine.Op) models.Edit {
	p := op.Config.(*appendNoteConfig).Property
	old, _ := op.Target.Properties[p].(string)
	note, _ := op.Params["note"].(string)
	return models.Edit{Op: models.EditUpdateObject, ObjectTypeID: op.Target.ObjectTypeID, ObjectID: op.Target.ID,
		Before: map[string]any{p: op.Target.Properties[p]}, After: map[string]any{p: strings.TrimPrefix(old+"; "+note, "; ")}}
}

func (k appendNote) Preview(_ context.Context, op *engine.Op) ([]models.Edit, error) {
	return []models.Edit{k.edit(op)}, nil
}

func (k appendNote) Apply(ctx context.Context, op *engine.Op) (*engine.Outcome, error) {
	ed := k.edit(op)
	if _, err := op.Ontology.In(op.Tx).UpdateObject(ctx, op.Target.ID, ed.After); err != nil {
		return nil, err
	}
	return &engine.Outcome{Edits: []models.Edit{ed}, Result: map[string]any{"appended": op.Params["note"]}}, nil
}

func (appendNote) Invert(ed models.Edit) ([]models.Edit, error) {
	return []models.Edit{{Op: ed.Op, ObjectTypeID: ed.ObjectTypeID, ObjectID: ed.ObjectID, Before: ed.After, After: ed.Before}}, nil
}

// TestKindDefinedOnlyInTheTest runs a kind registered only here end to
// end over HTTP on an in-process dev: definition, validate preview,
// execute and a batch. Without the registration the definition is refused
// (checked at the end), so the test proves the registration is all a kind
// needs.
func TestKindDefinedOnlyInTheTest(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := ""
			if d == "postgres" {
				dsn = testdb.DSN(t, d)
			}
			c := startDev(t, dsn, app.ExtraKinds(appendNote{}))
			c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
				"properties": []map[string]any{{"name": "title", "type": "string", "required": true}, {"name": "notes", "type": "string"}}}, nil)
			var obj, act struct {
				ID string `json:"id"`
			}
			c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects",
				map[string]any{"properties": map[string]any{"title": "t1", "notes": "first"}}, &obj)
			c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "add-note",
				"object_type_id": "Ticket", "operation_kind": "append_note",
				"inputs": []map[string]any{{"name": "note", "type": "string", "required": true}},
				"config": map[string]any{"operation": map[string]any{"property": "notes"}}}, &act)
			base := "/api/v1/ontology/actions/" + act.ID

			var v struct {
				Result  string        `json:"result"`
				Preview []models.Edit `json:"preview"`
			}
			c.must(http.StatusOK, "POST", base+"/validate", map[string]any{"target_object_id": obj.ID,
				"parameters": map[string]any{"note": "second"}}, &v)
			if v.Result != "VALID" || len(v.Preview) != 1 || v.Preview[0].After["notes"] != "first; second" {
				t.Fatalf("validate preview = %+v", v)
			}
			if got := c.notes(obj.ID); got != "first" {
				t.Fatalf("validate wrote: notes = %q", got)
			}

			var ex struct {
				Status string `json:"status"`
			}
			c.must(http.StatusOK, "POST", base+"/execute", map[string]any{"target_object_id": obj.ID,
				"parameters": map[string]any{"note": "second"}}, &ex)
			if ex.Status != "succeeded" || c.notes(obj.ID) != "first; second" {
				t.Fatalf("execute: %+v, notes = %q", ex, c.notes(obj.ID))
			}

			var b struct {
				Status    string `json:"status"`
				Succeeded int    `json:"succeeded"`
			}
			items := []map[string]any{}
			for _, n := range []string{"a", "b", "c"} {
				items = append(items, map[string]any{"target_object_id": obj.ID, "parameters": map[string]any{"note": n}})
			}
			c.must(http.StatusOK, "POST", base+"/execute-batch", map[string]any{"items": items}, &b)
			if b.Status != "succeeded" {
				t.Fatalf("batch: %+v", b)
			}
			if got := c.notes(obj.ID); got != "first; second; a; b; c" {
				t.Fatalf("after batch notes = %q", got)
			}
		})
	}
	t.Run("unregistered", func(t *testing.T) {
		c := startDev(t, "")
		c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
			"properties": []map[string]any{{"name": "title", "type": "string", "required": true}, {"name": "notes", "type": "string"}}}, nil)
		st, body := c.do("POST", "/api/v1/ontology/actions", map[string]any{"name": "add-note",
			"object_type_id": "Ticket", "operation_kind": "append_note",
			"config": map[string]any{"operation": map[string]any{"property": "notes"}}})
		if st != http.StatusBadRequest {
			t.Fatalf("append_note without its registration: %d %s", st, body)
		}
	})
}

// devClient talks to an in-process dev over HTTP as its admin.
type devClient struct {
	t    *testing.T
	base string
	// user and pass sign the requests; empty: the admin. bearer, when
	// set, is sent instead.
	user, pass, bearer string
}

// as is c signed in as another user.
func (c devClient) as(user, pass string) devClient {
	c.user, c.pass = user, pass
	return c
}

const adminPassword = "kind-test-password-1"

func startDev(t *testing.T, dsn string, opts ...app.Option) devClient {
	t.Helper()
	return startDevArgs(t, dsn, nil, opts...)
}

// startDevArgs starts an in-process dev with more flags.
func startDevArgs(t *testing.T, dsn string, more []string, opts ...app.Option) devClient {
	t.Helper()
	if dsn != "" {
		more = append([]string{"--database-url", dsn}, more...)
	}
	a := devtest.Start(t, adminPassword, more, nil, opts...)
	return devClient{t: t, base: a.APIURL}
}

func (c devClient) do(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	switch {
	case c.bearer != "":
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	case c.user != "":
		req.SetBasicAuth(c.user, c.pass)
	default:
		req.SetBasicAuth("admin", adminPassword)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (c devClient) must(want int, method, path string, body, into any) {
	c.t.Helper()
	st, out := c.do(method, path, body)
	if st != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, st, out, want)
	}
	if into != nil {
		if err := json.Unmarshal(out, into); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, out, err)
		}
	}
}

func (c devClient) notes(id string) string {
	c.t.Helper()
	s, _ := c.object(id)["notes"].(string)
	return s
}

// object reads the properties of the Ticket id.
func (c devClient) object(id string) map[string]any {
	c.t.Helper()
	var o struct {
		Properties map[string]any `json:"properties"`
	}
	c.must(http.StatusOK, "GET", "/api/v1/ontology/types/Ticket/objects/"+id, nil, &o)
	return o.Properties
}
