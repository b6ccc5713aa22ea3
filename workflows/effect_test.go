package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/testsuite"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/activities"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// ticketKind is an operation kind that exists only in this test: its
// effect "calls an external system" that fails twice and then assigns a
// ticket number, and its Apply writes that number to the target.
type ticketKind struct {
	keys    []string // the idempotency key of every effect attempt
	applied int
}

func (*ticketKind) Name() string                                               { return "open_ticket" }
func (*ticketKind) NeedsObjectType() bool                                      { return true }
func (*ticketKind) HasTarget(string) bool                                      { return true }
func (*ticketKind) NewConfig() any                                             { return &struct{}{} }
func (*ticketKind) CheckConfig(context.Context, *domain.KindScope, any) error  { return nil }
func (*ticketKind) References(any) domain.References                           { return domain.References{} }
func (*ticketKind) Invert(models.Edit) ([]models.Edit, error)                  { return nil, errors.New("not undoable") }
func (*ticketKind) Preview(context.Context, *engine.Op) ([]models.Edit, error) { return nil, nil }

func (k *ticketKind) EffectOptions(*engine.Op) engine.EffectOptions {
	return engine.EffectOptions{StartToClose: 10 * time.Second, MaxAttempts: 5, InitialInterval: 10 * time.Millisecond}
}

func (k *ticketKind) Effect(_ context.Context, op *engine.Op, key string) (json.RawMessage, error) {
	k.keys = append(k.keys, key)
	if len(k.keys) < 3 {
		return nil, errors.New("ticket system answered 503")
	}
	return json.RawMessage(`"T-42"`), nil
}

func (k *ticketKind) Apply(ctx context.Context, op *engine.Op) (*engine.Outcome, error) {
	k.applied++
	var ticket string
	if err := json.Unmarshal(op.Effect, &ticket); err != nil {
		return nil, err
	}
	obj, err := op.Ontology.In(op.Tx).UpdateObject(ctx, op.Target.ID, map[string]any{"ticket": ticket})
	if err != nil {
		return nil, err
	}
	return &engine.Outcome{Edits: []models.Edit{{Op: models.EditUpdateObject, ObjectTypeID: obj.ObjectTypeID, ObjectID: obj.ID,
		After: map[string]any{"ticket": ticket}}}}, nil
}

// An effect step is a regular activity before the run step: it fails
// twice and succeeds the third time, every attempt carries the execution
// id as its key, and the edits its result leads to are applied once.
func TestEffectStepRetriesThenRecordsOnce(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		k := &ticketKind{}
		kinds := kinds.Registry(k)
		store := ontology.NewStore(db, nil, kinds.Domain())
		eng := engine.New(engine.Deps{DB: db, Ontology: store, Kinds: kinds, Levels: store.Levels()})
		admin := &models.User{ID: uuid.NewString(), Username: "admin", PasswordHash: "x", Roles: models.NewJSON([]string{"admin"}), Clearance: "pii"}
		if err := db.Create(admin).Error; err != nil {
			t.Fatal(err)
		}
		ot, err := store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Incident", PrimaryKey: "title",
			Properties: []ontology.PropertySpec{{Name: "title", Type: domain.PropertyType{Base: domain.TypeString}, Required: true},
				{Name: "ticket", Type: domain.PropertyType{Base: domain.TypeString}}}})
		if err != nil {
			t.Fatal(err)
		}
		obj, err := store.CreateObject(ctx, nil, ot.ID, map[string]any{"title": "printer on fire"}, "", admin.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		var def domain.ActionDefinition
		if err := json.Unmarshal([]byte(`{"name":"open-ticket","object_type_id":"`+ot.ID+`","operation_kind":"open_ticket","config":{"operation":{}}}`), &def); err != nil {
			t.Fatal(err)
		}
		at, err := store.CreateActionType(ctx, admin.ID, def)
		if err != nil {
			t.Fatal(err)
		}
		ex := models.Execution{ID: uuid.NewString(), Kind: models.KindExecute, ActionTypeID: at.ID, ActionTypeName: at.Name,
			ActorID: admin.ID, ActorName: admin.Username, TargetObjectID: obj.ID, Status: models.StatusQueued}
		if err := db.Create(&ex).Error; err != nil {
			t.Fatal(err)
		}

		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		wf := New(activities.New(eng, nil))
		wf.Register(env)
		wf.RegisterActivities(env)
		env.ExecuteWorkflow(ActionWorkflowName, ActionInput{ExecutionID: ex.ID})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatalf("workflow: %v", err)
		}
		if strings.Join(k.keys, ",") != strings.Join([]string{ex.ID, ex.ID, ex.ID}, ",") {
			t.Errorf("effect attempts carried keys %v, want the execution id three times", k.keys)
		}
		var after models.Execution
		db.Take(&after, "id = ?", ex.ID)
		cur, _ := store.Object(ctx, nil, obj.ID)
		if k.applied != 1 || after.Status != models.StatusSucceeded || len(after.Edits.V) != 1 || cur.Properties["ticket"] != "T-42" {
			t.Errorf("applied %d times; execution %s with %d edits; object %v", k.applied, after.Status, len(after.Edits.V), cur.Properties)
		}
	})
}
