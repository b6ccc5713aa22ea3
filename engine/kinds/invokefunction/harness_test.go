package invokefunction_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/engine/kinds/invokefunction"
	"github.com/ontoflow/ontoflow/functions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// The engine these tests run functions on: the built-in kinds over a
// real ontology store (engine/kinds_test.go's harness, for this kind).

var admin = &models.User{ID: "00000000-0000-4000-8000-0000000000ad", Username: "admin", PasswordHash: "x",
	Roles: models.NewJSON([]string{"admin"}), Clearance: "pii", Organization: "acme"}

type env struct {
	db    *gorm.DB
	store *ontology.Store
	eng   *engine.Engine
}

func newEnv(t *testing.T, db *gorm.DB) *env {
	t.Helper()
	kinds := kinds.Registry()
	store := ontology.NewStore(db, nil, kinds.Domain())
	if err := db.Create(admin).Error; err != nil {
		t.Fatal(err)
	}
	return &env{db: db, store: store, eng: engine.New(engine.Deps{DB: db, Ontology: store, Kinds: kinds, Levels: store.Levels()})}
}

func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func decode(t *testing.T, s string, out any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
}

// execution writes an execution row as the API does before it starts the
// workflow.
func (e *env) execution(t *testing.T, at *domain.ActionType, kind, target string, params map[string]any, batch *string, index int) string {
	t.Helper()
	ex := models.Execution{ID: uuid.NewString(), Kind: kind, ActionTypeID: at.ID, ActionTypeName: at.Name, ActorID: admin.ID,
		ActorName: admin.Username, TargetObjectID: target, Parameters: models.NewNumJSON(params), Status: models.StatusQueued,
		BatchID: batch, BatchIndex: index}
	if err := e.db.Create(&ex).Error; err != nil {
		t.Fatal(err)
	}
	return ex.ID
}

// fnEnv is an engine whose invoke_function runs on a real functions
// service.
func fnEngineEnv(t *testing.T, db *gorm.DB) *env {
	t.Helper()
	reads := &functions.Reads{}
	k := invokefunction.InvokeFunction{Functions: functions.New(db, functions.Options{}), Reads: reads}
	kinds := kinds.Registry(k)
	store := ontology.NewStore(db, nil, kinds.Domain())
	reads.Store = store
	if err := db.Create(admin).Error; err != nil {
		t.Fatal(err)
	}
	return &env{db: db, store: store, eng: engine.New(engine.Deps{DB: db, Ontology: store, Kinds: kinds, Levels: store.Levels()})}
}

// runWithEffect takes an execution through the steps, the effect step
// included.
func (e *env) runWithEffect(ctx context.Context, id string) error {
	p, err := e.eng.Validate(ctx, id)
	if err == nil {
		err = e.eng.Authorize(ctx, p)
	}
	if err == nil && p.Effect != nil {
		p.EffectResult, err = e.eng.Effect(ctx, id, false)
	}
	if err == nil {
		_, err = e.eng.Run(ctx, p, true)
	}
	return err
}

// revert records a revert of orig and runs its step.
func (e *env) revert(t *testing.T, ctx context.Context, at *domain.ActionType, orig string) error {
	rv := models.Execution{ID: uuid.NewString(), Kind: models.KindRevert, ActionTypeID: at.ID, ActionTypeName: at.Name,
		ActorID: admin.ID, ActorName: admin.Username, Status: models.StatusQueued, RevertOf: &orig}
	if err := e.db.Create(&rv).Error; err != nil {
		t.Fatal(err)
	}
	_, err := e.eng.Revert(ctx, rv.ID)
	return err
}
