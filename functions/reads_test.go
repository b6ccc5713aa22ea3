package functions

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// TestQueryOrderBy: ctx.ontology.query's order_by (carried as
// $order_by) orders the objects as the REST listing's order_by does, on
// both dialects; an unknown one is refused naming order_by.
func TestQueryOrderBy(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		store := ontology.NewStore(db, nil, domain.NewKinds())
		admin := &models.User{ID: "00000000-0000-4000-8000-0000000000aa", Username: "admin", Roles: models.NewJSON([]string{"admin"})}
		if _, err := store.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "T", Properties: []ontology.PropertySpec{
			{Name: "n", Type: domain.T(domain.TypeInteger)}}}); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{2, 3, 1} {
			if _, err := store.CreateObjectAs(ctx, admin, "T", ontology.ObjectSpec{Properties: map[string]any{"n": n}}); err != nil {
				t.Fatal(err)
			}
		}
		r := NewReads(store)
		got := func(filters map[string]any) []any {
			objs, err := r.Query(ctx, models.Tx{}, admin, "T", filters, 10)
			if err != nil {
				t.Fatal(err)
			}
			var out []any
			for _, o := range objs {
				out = append(out, o.Properties["n"])
			}
			return out
		}
		for ob, want := range map[string]string{"-n": "[3 2 1]", "n": "[1 2 3]", "": "[2 3 1]"} {
			f := map[string]any{"n.greater_than": 0}
			if ob != "" {
				f[OrderByKey] = ob
			}
			if s := fmt.Sprint(got(f)); s != want {
				t.Errorf("order_by %q: %s, want %s", ob, s, want)
			}
		}
		if _, err := r.Query(ctx, models.Tx{}, admin, "T", map[string]any{OrderByKey: "nope"}, 10); err == nil || !strings.Contains(err.Error(), "order_by") {
			t.Fatalf("unknown order_by: %v", err)
		}
	})
}
