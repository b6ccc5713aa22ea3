package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/internal/harness/enginetest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// addToCount is an operation kind that exists only in this test: it adds
// an integer input to an integer property of the target. Registering it
// is all it takes for the ontology store to accept action types of the
// kind and for the engine to validate, preview, run and batch them.
type addToCount struct{}

type addToCountConfig struct {
	Property string `json:"property"`
	ByInput  string `json:"by_input"`
}

func (addToCount) Name() string          { return "add_to_count" }
func (addToCount) NeedsObjectType() bool { return true }
func (addToCount) HasTarget(string) bool { return true }
func (addToCount) NewConfig() any        { return &addToCountConfig{} }
func (addToCount) References(cfg any) domain.References {
	return domain.References{Properties: []string{cfg.(*addToCountConfig).Property}}
}

func (addToCount) CheckConfig(_ context.Context, s *domain.KindScope, cfg any) error {
	c := cfg.(*addToCountConfig)
	if p, ok := s.ObjectType.Property(c.Property); !ok || p.Type.Base != domain.TypeInteger {
		return s.Err(".property", "type_mismatch", "property %q must be an integer property", c.Property)
	}
	if in, ok := s.Inputs[c.ByInput]; !ok || in.Type.Base != domain.TypeInteger || !in.Required {
		return s.Err(".by_input", "type_mismatch", "input %q must be a required integer input", c.ByInput)
	}
	return nil
}

func (k addToCount) sum(op *engine.Op) (before, after int64) {
	c := op.Config.(*addToCountConfig)
	before = asInt(op.Target.Properties[c.Property])
	return before, before + asInt(op.Params[c.ByInput])
}

func (k addToCount) Preview(_ context.Context, op *engine.Op) ([]models.Edit, error) {
	c := op.Config.(*addToCountConfig)
	b, a := k.sum(op)
	return []models.Edit{{Op: "add_to_count", ObjectID: op.Target.ID, Before: map[string]any{c.Property: b}, After: map[string]any{c.Property: a}}}, nil
}

func (k addToCount) Apply(ctx context.Context, op *engine.Op) (*engine.Outcome, error) {
	c := op.Config.(*addToCountConfig)
	b, a := k.sum(op)
	obj, err := op.Ontology.In(op.Tx).UpdateObject(ctx, op.Target.ID, map[string]any{c.Property: a})
	if err != nil {
		return nil, err
	}
	return &engine.Outcome{Edits: []models.Edit{{Op: "add_to_count", ObjectTypeID: obj.ObjectTypeID, ObjectID: obj.ID,
		Before: map[string]any{c.Property: b}, After: map[string]any{c.Property: a}, UpdatedAtAfter: &obj.UpdatedAt}}}, nil
}

func (addToCount) Invert(ed models.Edit) ([]models.Edit, error) {
	return []models.Edit{{Op: models.EditUpdateObject, ObjectTypeID: ed.ObjectTypeID, ObjectID: ed.ObjectID,
		Before: ed.After, After: ed.Before, UpdatedAtBefore: ed.UpdatedAtAfter}}, nil
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case json.Number:
		n, _ := x.Int64()
		return n
	case int64:
		return x
	case int:
		return int64(x)
	case float64:
		return int64(x)
	}
	return 0
}

// The engine these tests run on is internal/harness/enginetest's.
var admin = enginetest.Admin

// A kind defined only in this file, registered beside the built-in ones,
// is checked at definition time, previewed by validate, executed, run in a
// batch, and inverted — with no change anywhere but its registration.
func TestKindDefinedOnlyInTheTest(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := enginetest.New(t, db, addToCount{})
		ot := enginetest.Must(e.Store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Counter", Properties: []ontology.PropertySpec{
			{Name: "label", Type: domain.T(domain.TypeString)}, {Name: "count", Type: domain.T(domain.TypeInteger)}}}))(t)
		def := func(property string) domain.ActionDefinition {
			var d domain.ActionDefinition
			enginetest.Decode(t, fmt.Sprintf(`{"name":"add","object_type_id":%q,"operation_kind":"add_to_count",
				"inputs":[{"name":"by","type":"integer","required":true}],
				"config":{"operation":{"property":%q,"by_input":"by"}}}`, ot.ID, property), &d)
			return d
		}

		// Definition time: the kind's own checks, and the strict decoding
		// of its config, answer as the built-in kinds' do.
		_, err := e.Store.CreateActionType(ctx, admin.ID, def("label"))
		if ae, ok := apperr.As(err); !ok || ae.Code != apperr.InvalidDefinition || ae.Details[0].Field != "config.operation.property" {
			t.Fatalf("a string property: %v, want InvalidDefinition naming config.operation.property", err)
		}
		bad := def("count")
		bad.Config.Operation = json.RawMessage(`{"property":"count","by_input":"by","url":"https://x"}`)
		_, err = e.Store.CreateActionType(ctx, admin.ID, bad)
		if ae, ok := apperr.As(err); !ok || ae.Code != apperr.InvalidDefinition || ae.Details[0].Field != "config.operation.url" || ae.Details[0].Reason != "not_allowed" {
			t.Fatalf("a member of another kind: %v, want not_allowed naming config.operation.url", err)
		}
		view := enginetest.Must(e.Store.CreateActionType(ctx, admin.ID, def("count")))(t)
		// The property is referenced by the action: deleting it is refused.
		if err := e.Store.DeleteProperty(ctx, "Counter", "count"); !apperr.Is(err, apperr.DependentsExist) {
			t.Fatalf("deleting a property the kind references: %v, want DependentsExist", err)
		}
		at := enginetest.Must(e.Store.ActionType(ctx, view.ID))(t)

		objs := make([]string, 4)
		for i := range objs {
			o := enginetest.Must(e.Store.CreateObject(ctx, nil, ot.ID, map[string]any{"label": fmt.Sprint(i), "count": json.Number("10")}, "", admin.ID, "acme"))(t)
			objs[i] = o.ID
		}

		// Validate: the kind's preview.
		v := enginetest.Must(e.Eng.Check(ctx, engine.Request{Action: at, Actor: admin, TargetID: objs[0], Parameters: map[string]any{"by": json.Number("5")}}))(t)
		if v.Result != engine.Valid || len(v.Edits) != 1 || v.Edits[0].Op != "add_to_count" ||
			fmt.Sprint(v.Edits[0].Before["count"], v.Edits[0].After["count"]) != "10 15" {
			t.Fatalf("preview = %+v", v)
		}
		if got := enginetest.Must(e.Store.Object(ctx, nil, objs[0]))(t).Properties["count"]; fmt.Sprint(got) != "10" {
			t.Fatalf("validate wrote: count = %v", got)
		}

		// Execute.
		id := e.Execution(t, at, models.KindExecute, objs[0], map[string]any{"by": json.Number("5")}, nil, 0)
		if err := e.Run(ctx, id); err != nil {
			t.Fatal(err)
		}
		ex := e.Row(t, id)
		if ex.Status != models.StatusSucceeded || len(ex.Edits.V) != 1 || ex.Edits.V[0].Op != "add_to_count" {
			t.Fatalf("execution = %+v", ex)
		}
		if got := enginetest.Must(e.Store.Object(ctx, nil, objs[0]))(t).Properties["count"]; fmt.Sprint(got) != "15" {
			t.Fatalf("after execute: count = %v, want 15", got)
		}
		// Run again (a retried activity): the edit is not applied twice.
		if _, err := e.Eng.Run(ctx, &engine.Prepared{ExecutionID: id, ActionTypeID: at.ID, ActorID: admin.ID, TargetID: objs[0]}, true); err != nil {
			t.Fatal(err)
		}
		if got := enginetest.Must(e.Store.Object(ctx, nil, objs[0]))(t).Properties["count"]; fmt.Sprint(got) != "15" {
			t.Fatalf("after a replayed run: count = %v, want 15", got)
		}

		// A batch over three objects, chunked and closed as the batch
		// workflow does.
		batch := e.Execution(t, at, models.KindBatch, "", nil, nil, 0)
		for i, o := range objs[1:] {
			e.Execution(t, at, models.KindBatchItem, o, map[string]any{"by": json.Number(fmt.Sprint(i + 1))}, &batch, i)
		}
		ids := enginetest.Must(e.Eng.ListBatchChunk(ctx, batch, 0, 3))(t)
		if len(ids) != 3 {
			t.Fatalf("chunk = %v", ids)
		}
		for _, id := range ids {
			if err := e.Run(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		tot := enginetest.Must(e.Eng.FinishBatch(ctx, batch))(t)
		if tot.Succeeded != 3 || tot.Status != models.StatusSucceeded {
			t.Fatalf("batch totals = %+v", tot)
		}
		for i, o := range objs[1:] {
			if got := enginetest.Must(e.Store.Object(ctx, nil, o))(t).Properties["count"]; fmt.Sprint(got) != fmt.Sprint(10+i+1) {
				t.Fatalf("batch item %d: count = %v", i, got)
			}
		}

		// Inversion: the kind's inverse, applied through the store, puts
		// the count back.
		inv := enginetest.Must(addToCount{}.Invert(ex.Edits.V[0]))(t)
		enginetest.Must(e.Store.UpdateObject(ctx, nil, inv[0].ObjectID, inv[0].After))(t)
		if got := enginetest.Must(e.Store.Object(ctx, nil, objs[0]))(t).Properties["count"]; fmt.Sprint(got) != "10" {
			t.Fatalf("after the inverse: count = %v, want 10", got)
		}
	})
}

// An unregistered kind is unknown to the store, and an action type stored
// by a build that had the kind is refused at run time, not half-run.
func TestUnregisteredKind(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	ctx := context.Background()
	e := enginetest.New(t, db) // without addToCount
	ot := enginetest.Must(e.Store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Counter", Properties: []ontology.PropertySpec{
		{Name: "count", Type: domain.T(domain.TypeInteger)}}}))(t)
	var d domain.ActionDefinition
	enginetest.Decode(t, fmt.Sprintf(`{"name":"add","object_type_id":%q,"operation_kind":"add_to_count","config":{"operation":{"property":"count"}}}`, ot.ID), &d)
	_, err := e.Store.CreateActionType(ctx, admin.ID, d)
	if ae, ok := apperr.As(err); !ok || ae.Details[0].Field != "operation_kind" || ae.Details[0].Reason != "unknown_kind" {
		t.Fatalf("unregistered kind: %v, want unknown_kind", err)
	}
	// Stored anyway (as by a build that registered it).
	other := enginetest.On(db, addToCount{})
	d.Inputs = []domain.InputField{{Name: "by", Type: domain.T(domain.TypeInteger), Required: true}}
	d.Config.Operation = json.RawMessage(`{"property":"count","by_input":"by"}`)
	view := enginetest.Must(other.Store.CreateActionType(ctx, admin.ID, d))(t)
	at := enginetest.Must(e.Store.ActionType(ctx, view.ID))(t)
	o := enginetest.Must(e.Store.CreateObject(ctx, nil, ot.ID, map[string]any{"count": json.Number("1")}, "", admin.ID, "acme"))(t)
	id := e.Execution(t, at, models.KindExecute, o.ID, map[string]any{"by": json.Number("1")}, nil, 0)
	if err := e.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ex := e.Row(t, id); ex.Status != models.StatusFailed || ex.ErrorCode != string(apperr.OperationNotSupported) {
		t.Fatalf("execution = %s %s, want failed OperationNotSupported", ex.Status, ex.ErrorCode)
	}
}

// deepEqualJSON compares two values as JSON (json.Number and float64
// spellings of one number are equal only when their text is).
func deepEqualJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

var _ = reflect.DeepEqual
