package ontology_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/ontology"
)

// TestLooseOrdersSettleTies: SQLite's text labels order matches by the
// millisecond of creation only (models.TextBlock), and Postgres orders
// an equality's rows by creation time alone, so a page must still come
// out in creation order, ties by id, when many matches share a
// millisecond and microseconds, were written in another order
// (restored) or relabelled by an update, and a page ends inside that
// millisecond or microsecond. Pages of every size from 1 to 9, both
// directions, through page tokens, of a search and of an equality.
func TestLooseOrdersSettleTies(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, `{"name":"Tie","primary_key":"key","properties":[
			{"name":"key","type":"string","required":true,"unique":true},{"name":"note","type":"string"},{"name":"kind","type":"string"}]}`, &sp)
		ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		r := rand.New(rand.NewSource(5))
		base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		var objs []domain.Object
		for i := 0; i < 90; i++ {
			// Three milliseconds, most objects in the middle one, a few
			// microseconds each, so that ties of one microsecond go by id.
			ms := []int{0, 1, 1, 1, 2}[r.Intn(5)]
			at := base.Add(time.Duration(ms)*time.Millisecond + time.Duration(r.Intn(4))*time.Microsecond)
			note, kind := "tie "+fmt.Sprint(i), "k"
			if i%5 == 0 {
				note, kind = "other", "other"
			}
			objs = append(objs, domain.Object{ID: uuid.NewString(), ObjectTypeID: "Tie", Marking: "public", CreatedBy: admin.ID,
				Organization: "o1", CreatedAt: at, UpdatedAt: at, Properties: map[string]any{"key": fmt.Sprint("k", i), "note": note, "kind": kind}})
		}
		// Restored in random order: the labels of one millisecond are in
		// the order written, not the listing's.
		for _, i := range r.Perm(len(objs)) {
			if err := s.RestoreObject(ctx, nil, objs[i]); err != nil {
				t.Fatal(err)
			}
		}
		// An update relabels a text: it goes after its millisecond's
		// others. The equality's rows are written again too.
		for _, i := range r.Perm(len(objs))[:20] {
			objs[i].Properties["note"], objs[i].Properties["kind"] = fmt.Sprint("tie again ", i), "k"
			if _, err := s.UpdateObject(ctx, nil, objs[i].ID, map[string]any{"note": objs[i].Properties["note"], "kind": "k"}); err != nil {
				t.Fatal(err)
			}
		}
		var want []string
		sort.Slice(objs, func(i, j int) bool {
			if !objs[i].CreatedAt.Equal(objs[j].CreatedAt) {
				return objs[i].CreatedAt.Before(objs[j].CreatedAt)
			}
			return objs[i].ID < objs[j].ID
		})
		for _, o := range objs {
			if o.Properties["note"] != "other" {
				want = append(want, o.ID)
			}
		}
		for _, c := range []struct {
			filter ontology.RawFilter
			order  string
		}{{ontology.RawFilter{Key: "note.includes", Value: "tie"}, ""}, {ontology.RawFilter{Key: "note.includes", Value: "tie"}, "-created_at"},
			{ontology.RawFilter{Key: "kind", Value: "k"}, ""}, {ontology.RawFilter{Key: "kind", Value: "k"}, "-created_at"}} {
			want := want
			if c.order != "" {
				want = reversed(want)
			}
			for size := 1; size <= 9; size++ {
				var got []string
				q := ontology.ObjectQuery{Filters: []ontology.RawFilter{c.filter}, OrderBy: c.order, Limit: size}
				for {
					page := ok(s.ListObjectsPage(ctx, admin, "Tie", q))(t)
					got = append(got, objIDs(page.Items)...)
					if page.NextPageToken == "" || len(got) > len(want) {
						break
					}
					q.PageToken = page.NextPageToken
				}
				if !slices.Equal(want, got) {
					t.Fatalf("%v, order %q, pages of %d: %d objects, want %d; first difference at %s", c.filter, c.order, size, len(got), len(want), firstDiff(want, got))
				}
			}
		}
	})
}

func reversed(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[len(xs)-1-i] = x
	}
	return out
}
