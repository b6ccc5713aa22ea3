package ontology_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

const countedType = `{"name":"Counted","properties":[{"name":"name","type":"string"},
	{"name":"done","type":"boolean"},{"name":"level","type":"marking"}]}`

// countsFromObjects is what the counters must hold: the type's objects,
// and per counted property each value's objects, read from the objects
// themselves ("<property>=<value>" → count; no value is "<property>=").
func countsFromObjects(t *testing.T, db *gorm.DB, typeID string) (int64, map[string]int64) {
	t.Helper()
	var objs []models.Object
	if err := db.Where("object_type_id = ?", typeID).Find(&objs).Error; err != nil {
		t.Fatal(err)
	}
	vals := map[string]int64{}
	for _, o := range objs {
		for _, p := range []string{"done", "level"} {
			v := o.Properties.V[p]
			s := ""
			if v != nil {
				s = fmt.Sprint(v)
			}
			vals[p+"="+s]++
		}
	}
	return int64(len(objs)), vals
}

// countsFromCounters are the same figures as the admin's aggregations
// answer them (from the counters).
func countsFromCounters(t *testing.T, s *ontology.Store) (int64, map[string]int64) {
	t.Helper()
	ctx := context.Background()
	res := ok(s.Aggregate(ctx, admin, "Counted", ontology.AggregateRequest{}))(t)
	total := res.Groups[0].Metrics["count"].(int64)
	vals := map[string]int64{}
	for _, p := range []string{"done", "level"} {
		res := ok(s.Aggregate(ctx, admin, "Counted", ontology.AggregateRequest{GroupBy: []ontology.GroupBy{{Property: p}}}))(t)
		for _, g := range res.Groups {
			s := ""
			if v := g.Key[0].Value; v != nil {
				s = fmt.Sprint(v)
			}
			vals[p+"="+s] += g.Metrics["count"].(int64)
		}
	}
	return total, vals
}

func sameCounts(t *testing.T, what string, n1 int64, v1 map[string]int64, n2 int64, v2 map[string]int64) {
	t.Helper()
	show := func(n int64, v map[string]int64) string {
		var ks []string
		for k, c := range v {
			if c != 0 {
				ks = append(ks, fmt.Sprintf("%s:%d", k, c))
			}
		}
		sort.Strings(ks)
		return fmt.Sprintf("%d objects; %s", n, strings.Join(ks, " "))
	}
	if a, b := show(n1, v1), show(n2, v2); a != b {
		t.Fatalf("%s: counters say %s\nobjects say  %s", what, a, b)
	}
}

// TestCountersStayExactUnderConcurrentWrites: writers creating, updating,
// deleting (two at once the same object, now and then),
// restoring deleted objects (a revert) and rolling back keep the
// counters equal to what the objects hold, on both dialects.
func TestCountersStayExactUnderConcurrentWrites(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, countedType, &sp)
		ot := ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		var mu sync.Mutex
		var live []string
		deleted := map[string]domain.Object{}
		levels := []any{"public", "confidential", "pii", nil}
		props := func(r *rand.Rand) map[string]any {
			p := map[string]any{"name": fmt.Sprint("n", r.Intn(1000))}
			if r.Intn(5) > 0 {
				p["done"] = r.Intn(2) == 0
			}
			if l := levels[r.Intn(len(levels))]; l != nil {
				p["level"] = l
			}
			return p
		}
		errRollback := errors.New("roll back")
		writer := func(w int) error {
			r := rand.New(rand.NewSource(int64(w)))
			for i := 0; i < 60; i++ {
				mu.Lock()
				var id string
				if len(live) > 0 {
					id = live[r.Intn(len(live))]
				}
				var dead *domain.Object
				for _, o := range deleted {
					o := o
					dead = &o
					break
				}
				mu.Unlock()
				switch op := r.Intn(10); {
				case op < 4 || id == "":
					o, err := s.CreateObject(ctx, nil, ot.ID, props(r), "public", admin.ID, "")
					if err != nil {
						return err
					}
					mu.Lock()
					live = append(live, o.ID)
					mu.Unlock()
				case op < 6:
					err := db.Transaction(func(tx *gorm.DB) error {
						if err := s.LockObject(ctx, tx, id); err != nil {
							return err
						}
						_, err := s.UpdateObject(ctx, tx, id, props(r))
						return err
					})
					if err != nil && !isNotFound(err) {
						return err
					}
				case op < 8:
					// Not taken out of live before: another writer may
					// delete it at the same time.
					// Locked first, as the action engine does: an update and
					// a delete of one object otherwise lock its index rows and
					// its row in opposite orders (a deadlock on Postgres).
					var o *domain.Object
					err := db.Transaction(func(tx *gorm.DB) error {
						if err := s.LockObject(ctx, tx, id); err != nil {
							return err
						}
						var err error
						o, _, err = s.DeleteObject(ctx, tx, id)
						return err
					})
					if err != nil && !isNotFound(err) {
						return err
					}
					mu.Lock()
					if err == nil {
						deleted[id] = *o
						for j, l := range live {
							if l == id {
								live = append(live[:j], live[j+1:]...)
								break
							}
						}
					}
					mu.Unlock()
				case op < 9 && dead != nil:
					mu.Lock()
					_, mine := deleted[dead.ID]
					delete(deleted, dead.ID)
					mu.Unlock()
					if !mine {
						continue
					}
					// Conflict: two deletes of it at once both said they
					// deleted it, and it was restored after the first.
					if err := s.RestoreObject(ctx, nil, *dead); apperr.Is(err, apperr.Conflict) {
						continue
					} else if err != nil {
						return fmt.Errorf("restore %s: %w", dead.ID, err)
					}
					mu.Lock()
					live = append(live, dead.ID)
					mu.Unlock()
				default:
					// A write whose transaction rolls back leaves no count.
					err := db.Transaction(func(tx *gorm.DB) error {
						if _, err := s.CreateObject(ctx, tx, ot.ID, props(r), "public", admin.ID, ""); err != nil {
							return err
						}
						if id != "" {
							if err := s.LockObject(ctx, tx, id); err != nil {
								return err
							}
							if _, _, err := s.DeleteObject(ctx, tx, id); err != nil && !isNotFound(err) {
								return err
							}
						}
						return errRollback
					})
					if !errors.Is(err, errRollback) && !isNotFound(err) {
						return err
					}
				}
			}
			return nil
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				if err := writer(w); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		n, vals := countsFromObjects(t, db, ot.ID)
		if n < 20 {
			t.Fatalf("only %d objects left: the writers did little", n)
		}
		cn, cvals := countsFromCounters(t, s)
		sameCounts(t, "after concurrent writes", cn, cvals, n, vals)
		// A property changed to a type not counted loses its counts.
		var ps ontology.PropertySpec
		decodeInto(t, `{"name":"done","type":"json"}`, &ps)
		if _, err := s.UpdateProperty(ctx, "Counted", "done", ps); err != nil {
			t.Fatal(err)
		}
		var left int64
		db.Model(&models.ValueCount{}).Where("prop = ?", propKey(t, db, ot.ID, "done")).Count(&left)
		if left != 0 {
			t.Fatalf("%d value counts of a property no longer counted", left)
		}
	})
}

func isNotFound(err error) bool { return apperr.Is(err, apperr.ObjectNotFound) }

func propKey(t *testing.T, db *gorm.DB, typeID, name string) int32 {
	t.Helper()
	var p models.Property
	if err := db.Where("object_type_id = ? AND name = ?", typeID, name).Take(&p).Error; err != nil {
		t.Fatal(err)
	}
	return p.IndexKey
}

// TestCountersOnlyForReadersOfEverything: the admin's count comes from
// the counters (a counter changed behind the store's back shows), a
// reader's, whose read rule hides objects, does not: it counts what the
// reader may read.
func TestCountersOnlyForReadersOfEverything(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, countedType, &sp)
		ot := ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		visible := map[bool]int64{}
		for i := 0; i < 30; i++ {
			marking, org := []string{"public", "pii"}[i%2], []string{"acme", "globex"}[i%3/2]
			done := i%4 == 0
			ok(s.CreateObject(ctx, nil, ot.ID, map[string]any{"name": fmt.Sprint(i), "done": done}, marking, admin.ID, org))(t)
			if marking == "public" && org == "acme" {
				visible[done]++
			}
		}
		count := func(u *models.User, gb ...ontology.GroupBy) map[string]int64 {
			res := ok(s.Aggregate(ctx, u, "Counted", ontology.AggregateRequest{GroupBy: gb}))(t)
			out := map[string]int64{}
			for _, g := range res.Groups {
				k := "all"
				if len(g.Key) > 0 {
					k = fmt.Sprint(g.Key[0].Value)
				}
				out[k] = g.Metrics["count"].(int64)
			}
			return out
		}
		if got := count(admin); got["all"] != 30 {
			t.Fatalf("admin's count %v, want 30", got)
		}
		// Skew the counters: the admin's answers follow them, alice's not.
		if err := models.CountObjects(ctx, db, ot.ID, 1000); err != nil {
			t.Fatal(err)
		}
		dk, tk := propKey(t, db, ot.ID, "done"), []byte{domain.KeyBool, 1}
		if err := db.Exec("UPDATE value_counts SET n = n + 1000 WHERE prop = ? AND key = ? AND shard = (SELECT MIN(shard) FROM value_counts WHERE prop = ? AND key = ?)", dk, tk, dk, tk).Error; err != nil {
			t.Fatal(err)
		}
		if got := count(admin); got["all"] != 1030 {
			t.Fatalf("admin's count %v: not from the counter", got)
		}
		if got := count(admin, ontology.GroupBy{Property: "done"}); got["true"] != 1008 {
			t.Fatalf("admin's count by done %v: not from the counters", got)
		}
		if got, want := count(alice)["all"], visible[true]+visible[false]; got != want {
			t.Fatalf("alice's count %d, want the %d objects she may read", got, want)
		}
		if got := count(alice, ontology.GroupBy{Property: "done"}); got["true"] != visible[true] || got["false"] != visible[false] {
			t.Fatalf("alice's count by done %v, want %v", got, visible)
		}
		// The explorer's type list: the admin gets the counter, alice an
		// exact count up to the cap, then an estimate ("about N").
		if c := ok(s.CountForList(ctx, admin, "Counted", 5))(t); c.N != 1030 || c.About {
			t.Fatalf("admin's listed count %+v, want the counter's 1030", c)
		}
		vis := visible[true] + visible[false]
		if c := ok(s.CountForList(ctx, alice, "Counted", 100))(t); c.N != vis || c.About {
			t.Fatalf("alice's listed count %+v, want exactly %d", c, vis)
		}
		c := ok(s.CountForList(ctx, alice, "Counted", 3))(t)
		if !c.About || c.N < 4 || c.N > 1030 {
			t.Fatalf("alice's listed count past the cap %+v, want about 4..1030", c)
		}
		if db.Dialector.Name() == "sqlite" && c.N != 1030*vis/30 {
			// Every object is in the sample: the share is exact.
			t.Fatalf("alice's estimate %d, want %d", c.N, 1030*vis/30)
		}
		// A filter is not answered by the counters either.
		res := ok(s.Aggregate(ctx, admin, "Counted", ontology.AggregateRequest{Filters: []ontology.AggFilter{{Key: "done", Value: []byte(`"true"`)}}}))(t)
		if n := res.Groups[0].Metrics["count"].(int64); n != 8 {
			t.Fatalf("admin's filtered count %d, want 8", n)
		}
	})
}

// TestCountersBuiltOnUpgrade: a database whose objects were written
// without counters (a version before them) is counted once by Migrate.
func TestCountersBuiltOnUpgrade(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, countedType, &sp)
		ot := ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		for i := 0; i < 12; i++ {
			ok(s.CreateObject(ctx, nil, ot.ID, map[string]any{"name": fmt.Sprint(i), "done": i%3 == 0,
				"level": []string{"public", "pii"}[i%2]}, "public", admin.ID, ""))(t)
		}
		all := db.Session(&gorm.Session{AllowGlobalUpdate: true})
		for _, m := range []any{&models.ObjectCount{}, &models.ValueCount{}, &models.CountBuild{}} {
			if err := all.Delete(m).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		n, vals := countsFromObjects(t, db, ot.ID)
		cn, cvals := countsFromCounters(t, s)
		sameCounts(t, "after the upgrade", cn, cvals, n, vals)
	})
}
