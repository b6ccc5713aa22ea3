package ontology_test

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/ontology"
)

// TestListObjectsCapsFilters: the store refuses more than
// defaults.MaxFilters filters whoever asks (functions' ctx.ontology.query
// and the console call it without the API's check), naming filter and
// the cap, where 999 were SQLite's "Expression tree is too large" (issue
// 41, finding 3); at the cap the query runs.
func TestListObjectsCapsFilters(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db)
		f.employeeObj(t, admin, `{"name":"Ann","age":30}`)
		ctx := context.Background()
		filters := func(n int) []ontology.RawFilter {
			out := make([]ontology.RawFilter, n)
			for i := range out {
				out[i] = ontology.RawFilter{Key: "name.exists", Value: "true"}
			}
			return out
		}
		for _, n := range []int{defaults.MaxFilters + 1, 999} {
			_, err := f.s.ListObjects(ctx, alice, "Employee", ontology.ObjectQuery{Filters: filters(n), OrderBy: "-age", Limit: 10})
			e, ok := apperr.As(err)
			if !ok || e.Code != apperr.InvalidArgument || len(e.Details) == 0 || e.Details[0].Field != "filter" {
				t.Fatalf("%d filters: %v, want InvalidArgument naming filter", n, err)
			}
		}
		objs, err := f.s.ListObjects(ctx, admin, "Employee", ontology.ObjectQuery{Filters: filters(defaults.MaxFilters), OrderBy: "-age", Limit: 10})
		if err != nil || len(objs) != 1 {
			t.Fatalf("%d filters: %d objects, %v; want 1", defaults.MaxFilters, len(objs), err)
		}
	})
}
