package revert_test

import (
	"context"
	"fmt"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/enginetest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// A function that updates one object twice is reverted: the second
// update is undone first and gives the object back the update time the
// first one left, so the first is not taken for a later edit.
func TestRevertTwoUpdatesOfOneObject(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := enginetest.NewFunctions(t, db)
		ot := enginetest.Must(e.Store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString)}, {Name: "notes", Type: domain.T(domain.TypeString)}}}))(t)
		src := `export default function (ctx) { return { edits: [
    { type: "update", object_id: ctx.target.id, properties: { notes: "one" } },
    { type: "update", object_id: ctx.target.id, properties: { title: "two" } } ] }; }`
		var d domain.ActionDefinition
		enginetest.Decode(t, fmt.Sprintf(`{"name":"fn","object_type_id":%q,"operation_kind":"invoke_function",
			"config":{"operation":{"inline":{"runtime":"javascript","source":%q}}}}`, ot.ID, src), &d)
		at := enginetest.Must(e.Store.ActionType(ctx, enginetest.Must(e.Store.CreateActionType(ctx, admin.ID, d))(t).ID))(t)
		target := enginetest.Must(e.Store.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"title": "t", "notes": "orig"}}))(t)
		id := e.Execution(t, at, models.KindExecute, target.ID, map[string]any{}, nil, 0)
		if err := e.RunWithEffect(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := e.Revert(ctx, t, at, id); err != nil {
			t.Fatalf("revert: %v", err)
		}
	})
}
