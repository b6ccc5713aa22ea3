package execstore_test

import (
	"context"
	"errors"
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

type bucketKey struct{ grain, start, action, actor, status, code string }

// recount counts the executions table per bucket of the per-actor rollup
// (grain "") and of the daily totals, with each bucket's
// duration histogram and, for failed buckets, greatest id; and reads the
// rollup and the totals the same way.
func recount(t *testing.T, db *gorm.DB) (want, got map[bucketKey]string) {
	t.Helper()
	var rows []models.Execution
	if err := db.Select("id, action_type_id, actor_id, status, error_code, created_at, finished_at").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	type tally struct {
		n     int
		maxID string
		hist  [models.Bins]int64
	}
	tallies := map[bucketKey]*tally{}
	for _, r := range rows {
		at := r.CreatedAt.UTC()
		hour, day := at.Truncate(time.Hour).Format(time.RFC3339), at.Truncate(24*time.Hour).Format(time.RFC3339)
		for _, k := range []bucketKey{{"", hour, r.ActionTypeID, r.ActorID, r.Status, r.ErrorCode},
			{models.GrainDay, day, r.ActionTypeID, "", r.Status, r.ErrorCode}} {
			c := tallies[k]
			if c == nil {
				c = &tally{}
				tallies[k] = c
			}
			c.n++
			c.maxID = max(c.maxID, r.ID)
			if r.FinishedAt != nil {
				c.hist[models.DurationBin(r.CreatedAt, *r.FinishedAt)]++
			}
		}
	}
	show := func(k bucketKey, n int64, maxID string, hist [models.Bins]int64) string {
		s := fmt.Sprint(n)
		if k.status == models.StatusFailed {
			s += " " + maxID
		}
		for i, c := range hist {
			if c != 0 {
				s += fmt.Sprintf(" b%d=%d", i, c)
			}
		}
		return s
	}
	want = map[bucketKey]string{}
	for k, c := range tallies {
		want[k] = show(k, int64(c.n), c.maxID, c.hist)
	}
	var rolled []models.ExecutionRollup
	if err := db.Find(&rolled).Error; err != nil {
		t.Fatal(err)
	}
	var totals []models.ExecutionTotal
	if err := db.Find(&totals).Error; err != nil {
		t.Fatal(err)
	}
	got = map[bucketKey]string{}
	for _, r := range rolled {
		if r.N != 0 || r.Counts() != [models.Bins]int64{} {
			k := bucketKey{"", r.Hour.UTC().Format(time.RFC3339), r.ActionTypeID, r.ActorID, r.Status, r.ErrorCode}
			got[k] = show(k, r.N, r.ExampleID, r.Counts())
		}
	}
	for _, r := range totals {
		if r.N != 0 || r.Counts() != [models.Bins]int64{} {
			k := bucketKey{r.Grain, r.Start.UTC().Format(time.RFC3339), r.ActionTypeID, "", r.Status, r.ErrorCode}
			got[k] = show(k, r.N, r.ExampleID, r.Counts())
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
		if rnd.Intn(2) == 0 {
			// Shared buckets: the last three hours, by the minute.
			ex.CreatedAt = now.Add(-time.Duration(rnd.Intn(3*60)) * time.Minute)
		} else {
			// Days and hours apart, to the nanosecond.
			ex.CreatedAt = now.Add(-time.Duration(rnd.Int63n(int64(72 * time.Hour))))
		}
		return ex
	}
	// Finished times a random few milliseconds to seconds after now, so
	// the durations fall in many bins.
	at := func() time.Time { return now.Add(time.Duration(rnd.Int63n(int64(5 * time.Second)))) }
	fail := func() execstore.Failure {
		return execstore.Failure{Code: []string{"E1", "E2", ""}[rnd.Intn(3)], Message: "m", At: at()}
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
				return s.Succeed(ctx, tx, ex, execstore.Success{At: at()})
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
				_, err = s.CloseBatch(ctx, id, models.StatusPartial, at(), nil)
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

// A backfill that stops midway (a day's transaction fails, as a crash
// would end it) keeps the days it finished, and the next run goes on from
// its cursor while writers keep counting: the rollups end equal to a
// recount, including buckets whose executions are gone.
func TestBackfillRollupResumesAfterACrash(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx, s, now := context.Background(), execstore.New(db), time.Now().UTC()
		var old []models.Execution
		for i := range 40 {
			ex := newRow(nil)
			ex.ActorID, ex.CreatedAt = fmt.Sprint("u", i%3), now.Add(-time.Duration(i)*7*time.Hour)
			if i%3 != 0 {
				fin := ex.CreatedAt.Add(time.Duration(i*i) * time.Millisecond)
				ex.Status, ex.FinishedAt = models.StatusSucceeded, &fin
				if i%2 == 0 {
					ex.Status, ex.ErrorCode = models.StatusFailed, fmt.Sprint("E", i%4)
				}
			}
			old = append(old, *ex)
		}
		// Written as an older version did: no rollups; and a stale bucket
		// on a day without executions.
		if err := db.Create(&old).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.ExecutionTotal{Grain: models.GrainDay, Start: now.Add(-30 * 24 * time.Hour).Truncate(24 * time.Hour),
			ActionTypeID: "gone", Status: models.StatusQueued, N: 5}).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Where("name = ?", execstore.RollupBackfill).Delete(&models.DataMigration{}).Error; err != nil {
			t.Fatal(err)
		}
		days := 0
		execstore.SetAfterDay(func(time.Time) error {
			if days++; days == 3 {
				return errors.New("crash")
			}
			return nil
		})
		defer execstore.SetAfterDay(nil)
		if _, err := s.BackfillRollup(ctx); err == nil {
			t.Fatal("the backfill went through the crash")
		}
		var m models.DataMigration
		if err := db.Take(&m, "name = ?", execstore.RollupBackfill).Error; err != nil || m.Cursor == "" || m.Cursor == models.CursorStart {
			t.Fatalf("after the crash: %+v, %v; want a cursor past two days", m, err)
		}
		execstore.SetAfterDay(nil)
		// Writers between the runs, in days rebuilt and days not yet.
		for _, id := range []string{old[0].ID, old[39].ID} {
			if _, err := s.Fail(ctx, id, execstore.Failure{Code: "LATE", At: now}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Create(ctx, newRow(nil)); err != nil {
			t.Fatal(err)
		}
		if ran, err := s.BackfillRollup(ctx); err != nil || !ran {
			t.Fatalf("resumed BackfillRollup = %v, %v", ran, err)
		}
		sameCounts(t, db)
		if ran, err := s.BackfillRollup(ctx); err != nil || ran {
			t.Fatalf("BackfillRollup once done = %v, %v, want false", ran, err)
		}
	})
}

// An upgrade from schema version 4 deletes the hourly totals it kept,
// which nothing keeps any more, and leaves the rollups equal to a
// recount; run again, it finds nothing to delete.
func TestDropHourTotals(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx, s, now := context.Background(), execstore.New(db), time.Now().UTC()
		ex := newRow(nil)
		if err := s.Create(ctx, ex); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fail(ctx, ex.ID, execstore.Failure{Code: "E", At: now}, nil); err != nil {
			t.Fatal(err)
		}
		// As version 4 left them: an hour row beside each day row.
		var v4 []models.ExecutionTotal
		for _, st := range []string{models.StatusQueued, models.StatusFailed} {
			v4 = append(v4, models.ExecutionTotal{Grain: models.GrainHour, Start: ex.CreatedAt.UTC().Truncate(time.Hour),
				ActionTypeID: ex.ActionTypeID, Status: st, N: 1})
		}
		if err := db.Create(&v4).Error; err != nil {
			t.Fatal(err)
		}
		if n, err := s.DropHourTotals(ctx); err != nil || n != 2 {
			t.Fatalf("DropHourTotals = %d, %v; want the 2 hour rows", n, err)
		}
		sameCounts(t, db)
		if n, err := s.DropHourTotals(ctx); err != nil || n != 0 {
			t.Fatalf("second DropHourTotals = %d, %v; want 0", n, err)
		}
	})
}
