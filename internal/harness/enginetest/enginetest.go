// Package enginetest is the engine that the engine's, its kinds' and
// revert's tests run actions on: the built-in kinds (and a test's own)
// over a real ontology store on a test database, with helpers that record
// an execution as the API does and take it through the steps in the
// workflows' order. One copy, so that the tests of every package above
// the core drive the steps the same way.
package enginetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/engine/kinds/invokefunction"
	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/functions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/revert"
	"github.com/ontoflow/ontoflow/whatif"
)

// Admin is the user every helper acts as (New creates it).
var Admin = &models.User{ID: "00000000-0000-4000-8000-0000000000ad", Username: "admin", PasswordHash: "x",
	Roles: models.NewJSON([]string{"admin"}), Clearance: "pii", Organization: "acme"}

// Env is an engine (what-if assembled) over an ontology store on DB, and
// the revert step over both.
type Env struct {
	DB       *gorm.DB
	Store    *ontology.Store
	Eng      *engine.Engine
	Reverter *revert.Reverter
}

// New returns an Env running the built-in kinds and extra (one with a
// built-in kind's name replaces it), and creates Admin.
func New(t *testing.T, db *gorm.DB, extra ...engine.Kind) *Env {
	t.Helper()
	e := On(db, extra...)
	if err := db.Create(Admin).Error; err != nil {
		t.Fatal(err)
	}
	return e
}

// On is New without creating Admin: a second engine over the same
// database.
func On(db *gorm.DB, extra ...engine.Kind) *Env {
	reg := kinds.Registry(extra...)
	store := ontology.NewStore(db, nil, reg.Domain())
	eng := engine.New(engine.Deps{DB: db, Ontology: store, Kinds: reg, Levels: store.Levels(), Branches: whatif.New(db, store)})
	return &Env{DB: db, Store: store, Eng: eng, Reverter: revert.New(db, store, eng)}
}

// NewFunctions is New whose invoke_function runs on a real functions
// service (reading the ontology through the Env's store).
func NewFunctions(t *testing.T, db *gorm.DB) *Env {
	t.Helper()
	reads := functions.NewReads(ontology.NewStore(db, nil, nil))
	return New(t, db, invokefunction.InvokeFunction{Functions: functions.New(db, functions.Options{}), Reads: reads})
}

// Execution writes an execution row as the API does before it starts the
// workflow (through execstore, the only writer of execution rows).
func (e *Env) Execution(t *testing.T, at *domain.ActionType, kind, target string, params map[string]any, batch *string, index int) string {
	t.Helper()
	ex := models.Execution{ID: uuid.NewString(), Kind: kind, ActionTypeID: at.ID, ActionTypeName: at.Name, ActorID: Admin.ID,
		ActorName: Admin.Username, TargetObjectID: target, Parameters: models.NewNumJSON(params), Status: models.StatusQueued,
		BatchID: batch, BatchIndex: index}
	if err := execstore.New(e.DB).Create(context.Background(), &ex); err != nil {
		t.Fatal(err)
	}
	return ex.ID
}

// Run takes an execution through the steps in the action workflow's
// order, recording a refusal as the workflow does.
func (e *Env) Run(ctx context.Context, id string) error {
	p, err := e.Eng.Validate(ctx, id)
	if err == nil {
		err = e.Eng.Authorize(ctx, p)
	}
	if err == nil {
		_, err = e.Eng.Run(ctx, p, len(p.Deliveries) == 0)
	}
	if err != nil {
		ae, _ := apperr.As(err)
		f := engine.Failure{Code: string(apperr.CodeOf(err)), Message: err.Error()}
		if ae != nil {
			f.Message = ae.Message
		}
		return e.Eng.RecordFailure(ctx, id, f)
	}
	for i, d := range p.Deliveries {
		if err := e.Eng.Deliver(ctx, id, d.Channel, i == len(p.Deliveries)-1); err != nil {
			return err
		}
	}
	return nil
}

// RunWithEffect takes an execution through the steps, the effect step
// included, returning the first step's error (nothing recorded).
func (e *Env) RunWithEffect(ctx context.Context, id string) error {
	p, err := e.Eng.Validate(ctx, id)
	if err == nil {
		err = e.Eng.Authorize(ctx, p)
	}
	if err == nil && p.Effect != nil {
		p.EffectResult, err = e.Eng.Effect(ctx, id, false)
	}
	if err == nil {
		_, err = e.Eng.Run(ctx, p, true)
	}
	return err
}

// Row reads execution id.
func (e *Env) Row(t *testing.T, id string) models.Execution {
	t.Helper()
	var ex models.Execution
	if err := e.DB.Take(&ex, "id = ?", id).Error; err != nil {
		t.Fatal(err)
	}
	return ex
}

// Revert records a revert of orig by Admin and runs its step.
func (e *Env) Revert(ctx context.Context, t *testing.T, at *domain.ActionType, orig string) error {
	t.Helper()
	rv := models.Execution{ID: uuid.NewString(), Kind: models.KindRevert, ActionTypeID: at.ID, ActionTypeName: at.Name,
		ActorID: Admin.ID, ActorName: Admin.Username, Status: models.StatusQueued, RevertOf: &orig}
	if err := execstore.New(e.DB).Create(ctx, &rv); err != nil {
		t.Fatal(err)
	}
	_, err := e.Reverter.Revert(ctx, rv.ID)
	return err
}

// Must returns a check of a (value, error) pair for a test: the value, or
// the test fails with the error. Written Must(f())(t).
func Must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// Decode decodes the JSON s into out strictly (numbers as json.Number,
// no unknown fields), failing the test otherwise.
func Decode(t *testing.T, s string, out any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
}
