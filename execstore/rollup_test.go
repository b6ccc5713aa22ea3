package execstore_test

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

type bucketKey struct{ hour, action, actor, status, code string }

// recount counts the executions table per bucket (failed buckets also
// with their greatest id) and reads the rollup the same way.
func recount(t *testing.T, db *gorm.DB) (want, got map[bucketKey]string) {
	t.Helper()
	var rows []models.Execution
	if err := db.Select("id, action_type_id, actor_id, status, error_code, created_at").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	n, maxID := map[bucketKey]int{}, map[bucketKey]string{}
	for _, r := range rows {
		k := bucketKey{r.CreatedAt.UTC().Truncate(time.Hour).Format(time.RFC3339), r.ActionTypeID, r.ActorID, r.Status, r.ErrorCode}
		n[k]++
		maxID[k] = max(maxID[k], r.ID)
	}
	want = map[bucketKey]string{}
	for k, c := range n {
		want[k] = fmt.Sprint(c)
		if k.status == models.StatusFailed {
			want[k] += " " + maxID[k]
		}
	}
	var rolled []models.ExecutionRollup
	if err := db.Find(&rolled).Error; err != nil {
		t.Fatal(err)
	}
	got = map[bucketKey]string{}
	for _, r := range rolled {
		if r.N == 0 {
			continue
		}
		k := bucketKey{r.Hour.UTC().Format(time.RFC3339), r.ActionTypeID, r.ActorID, r.Status, r.ErrorCode}
		got[k] = fmt.Sprint(r.N)
		if k.status == models.StatusFailed {
			got[k] += " " + r.ExampleID
		}
	}
	return want, got
}

func sameCounts(t *testing.T, db *gorm.DB) {
	t.Helper()
	want, got := recount(t, db)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("bucket %v: rollup %q, recount %q", k, got[k], w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("bucket %v: rollup %q, no executions", k, g)
		}
	}
}

// The rollup equals a recount of the executions after random creates,
// batches and status changes by concurrent writers.
func TestRollupMatchesARecount(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx, s := context.Background(), execstore.New(db)
		now := time.Now().UTC()
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- randomWrites(ctx, db, s, rand.New(rand.NewSource(int64(w))), now)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		sameCounts(t, db)
	})
}

// randomWrites makes rows in a few shared buckets (two actions, two
// actors, three hours) and moves them through every status change.
func randomWrites(ctx context.Context, db *gorm.DB, s *execstore.Store, rnd *rand.Rand, now time.Time) error {
	var ids []string
	row := func(batch *models.Execution) *models.Execution {
		ex := newRow(batch)
		ex.ActionTypeID = []string{"a1", "a2"}[rnd.Intn(2)]
		ex.ActorID = []string{"u1", "u2"}[rnd.Intn(2)]
		ex.CreatedAt = now.Add(-time.Duration(rnd.Intn(3*60)) * time.Minute)
		return ex
	}
	fail := func() execstore.Failure {
		return execstore.Failure{Code: []string{"E1", "E2", ""}[rnd.Intn(3)], Message: "m", At: now}
	}
	for range 40 {
		var id string
		if len(ids) > 0 {
			id = ids[rnd.Intn(len(ids))]
		}
		var err error
		switch op := rnd.Intn(9); {
		case op == 0 || id == "":
			ex := row(nil)
			err, ids = s.Create(ctx, ex), append(ids, ex.ID)
		case op == 1:
			b := row(nil)
			b.Kind = models.KindBatch
			items := []models.Execution{*row(b), *row(b), *row(b)}
			err, ids = s.CreateBatch(ctx, b, items), append(ids, b.ID, items[0].ID)
		case op == 2:
			err = s.MarkRunning(ctx, id, now, nil)
		case op == 3:
			_, err = s.Fail(ctx, id, fail(), nil)
		case op == 4:
			err = db.Transaction(func(tx *gorm.DB) error {
				ex, err := s.Lock(ctx, tx, id)
				if err != nil || ex.Status == models.StatusSucceeded || ex.Status == models.StatusFailed {
					return err
				}
				return s.Succeed(ctx, tx, ex, execstore.Success{At: now})
			})
		case op == 5:
			err = s.FailUnstarted(ctx, id, fail())
		case op == 6:
			_, err = s.Abandon(ctx, id, fail())
		case op == 7:
			// A row read, maybe moved by another writer since: the
			// guard on status keeps the count right.
			var ex models.Execution
			if err = db.Take(&ex, "id = ?", id).Error; err == nil {
				err = s.Start(ctx, &ex, now, nil)
			}
		default:
			if _, err = s.FailOpenItems(ctx, id, fail()); err == nil {
				_, err = s.CloseBatch(ctx, id, models.StatusPartial, now, nil)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// The backfill counts rows written without the rollup (by an older
// version), replaces whatever the rollup held, and runs once.
func TestBackfillRollup(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx, s, now := context.Background(), execstore.New(db), time.Now().UTC()
		var old []models.Execution
		for i := range 30 {
			ex := newRow(nil)
			ex.ActorID, ex.CreatedAt = fmt.Sprint("u", i%3), now.Add(-time.Duration(i)*time.Hour)
			if i%2 == 0 {
				ex.Status, ex.ErrorCode = models.StatusFailed, fmt.Sprint("E", i%4)
			}
			old = append(old, *ex)
		}
		// Written as an older version did: no rollup.
		if err := db.Create(&old).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.ExecutionRollup{Hour: now.Truncate(time.Hour), ActionTypeID: "stale", ActorID: "u",
			Status: models.StatusQueued, N: 5}).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Where("name = ?", execstore.RollupBackfill).Delete(&models.DataMigration{}).Error; err != nil {
			t.Fatal(err)
		}
		ran, err := s.BackfillRollup(ctx)
		if err != nil || !ran {
			t.Fatalf("BackfillRollup = %v, %v", ran, err)
		}
		sameCounts(t, db)
		if err := s.Create(ctx, newRow(nil)); err != nil {
			t.Fatal(err)
		}
		if ran, err := s.BackfillRollup(ctx); err != nil || ran {
			t.Fatalf("second BackfillRollup = %v, %v, want false", ran, err)
		}
		sameCounts(t, db)
	})
}
