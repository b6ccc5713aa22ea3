package engine_test

import (
	"context"
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

// The revert tests' engine runs functions (their edits are what they
// revert); engine/kinds/invokefunction's tests have the same harness.

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
