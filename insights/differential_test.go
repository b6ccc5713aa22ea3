package insights_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/insights"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// The report equals a direct count over the executions table — by
// action, status and error code, with the greatest id of each failed
// group, and p50/p95 as the bin of the nearest-rank duration — for random
// executions across four days moved through every status change (retries
// and the batch path included), for windows starting anywhere (on an
// hour, on a midnight, between), as an auditor and as each actor.
func TestReportEqualsADirectCount(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		now := time.Now().UTC()
		rnd := rand.New(rand.NewSource(31))
		actions := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
		for i, id := range actions {
			if err := db.Create(&models.ActionType{ID: id, Name: fmt.Sprint("action-", i)}).Error; err != nil {
				t.Fatal(err)
			}
		}
		randomLog(ctx, t, db, rnd, now, actions)
		s := insights.New(db)
		sinces := []time.Time{now.Add(-24 * time.Hour), now.Add(-7 * 24 * time.Hour), now.Truncate(time.Hour).Add(-5 * time.Hour),
			now.Truncate(24 * time.Hour).Add(-24 * time.Hour), now.Add(-time.Minute)}
		for range 6 {
			sinces = append(sinces, now.Add(-time.Duration(rnd.Int63n(int64(100*time.Hour)))))
		}
		for _, since := range sinces {
			for _, actor := range []string{"", "u0", "u1", "u2"} {
				r, err := s.Report(ctx, insights.Query{Since: since, OnlyActorID: actor})
				if err != nil {
					t.Fatal(err)
				}
				want, got := direct(t, db, since, actor), reported(r)
				if got != want {
					t.Errorf("since %s, actor %q:\nreport %s\ndirect %s", since.Format(time.RFC3339Nano), actor, got, want)
				}
			}
		}
	})
}

// randomLog writes executions created over the last four days through
// the store: single ones and batches created, started, succeeded, failed
// (twice, as a retry would), abandoned, batches closed with their open
// items; and some loaded finished as they are.
func randomLog(ctx context.Context, t *testing.T, db *gorm.DB, rnd *rand.Rand, now time.Time, actions []string) {
	t.Helper()
	s := execstore.New(db)
	row := func(batch *models.Execution) *models.Execution {
		id := uuid.NewString()
		ex := &models.Execution{ID: id, Kind: models.KindExecute, WorkflowID: "wf-" + id, ActionTypeName: "recorded",
			ActionTypeID: actions[rnd.Intn(len(actions))], ActorID: fmt.Sprint("u", rnd.Intn(3)), Status: models.StatusQueued,
			CreatedAt: now.Add(-time.Duration(rnd.Int63n(int64(96 * time.Hour))))}
		if batch != nil {
			ex.Kind, ex.WorkflowID, ex.BatchID, ex.CreatedAt = models.KindBatchItem, batch.WorkflowID, &batch.ID, batch.CreatedAt
		}
		return ex
	}
	// A finish some milliseconds to minutes after creation.
	finish := func(ex *models.Execution) time.Time {
		return ex.CreatedAt.Add(time.Duration(rnd.ExpFloat64() * float64(3*time.Second)))
	}
	var rows []*models.Execution
	var batches []*models.Execution
	var loaded []models.Execution
	for range 150 {
		switch op := rnd.Intn(10); {
		case op < 6:
			ex := row(nil)
			if err := s.Create(ctx, ex); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, ex)
		case op < 8:
			b := row(nil)
			b.Kind = models.KindBatch
			items := []models.Execution{*row(b), *row(b), *row(b)}
			if err := s.CreateBatch(ctx, b, items); err != nil {
				t.Fatal(err)
			}
			batches = append(batches, b)
			for i := range items {
				rows = append(rows, &items[i])
			}
		default:
			ex := row(nil)
			ex.Status = []string{models.StatusSucceeded, models.StatusFailed, models.StatusRunning}[rnd.Intn(3)]
			if ex.Status != models.StatusRunning {
				fin := finish(ex)
				ex.FinishedAt = &fin
			}
			if ex.Status == models.StatusFailed {
				ex.ErrorCode = "LOADED"
			}
			loaded = append(loaded, *ex)
		}
	}
	if err := s.Load(ctx, loaded, 7); err != nil {
		t.Fatal(err)
	}
	codes := []string{"E1", "E2", ""}
	for _, ex := range rows {
		switch rnd.Intn(6) {
		case 0: // left queued
		case 1:
			if err := s.Start(ctx, ex, ex.CreatedAt, nil); err != nil {
				t.Fatal(err)
			}
		case 2, 3:
			if err := s.MarkRunning(ctx, ex.ID, ex.CreatedAt, nil); err != nil {
				t.Fatal(err)
			}
			err := db.Transaction(func(tx *gorm.DB) error {
				locked, err := s.Lock(ctx, tx, ex.ID)
				if err != nil {
					return err
				}
				return s.Succeed(ctx, tx, locked, execstore.Success{At: finish(ex)})
			})
			if err != nil {
				t.Fatal(err)
			}
		case 4:
			f := execstore.Failure{Code: codes[rnd.Intn(len(codes))], Message: "m", At: finish(ex)}
			for range 2 { // the second, a retry, changes nothing
				if _, err := s.Fail(ctx, ex.ID, f, nil); err != nil {
					t.Fatal(err)
				}
				f.Code, f.At = "RETRY", finish(ex)
			}
		default:
			if _, err := s.Abandon(ctx, ex.ID, execstore.Failure{Code: "ABANDONED", At: finish(ex)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, b := range batches {
		f := execstore.Failure{Code: "CLOSED", At: finish(b)}
		if i%2 == 0 {
			if _, err := s.FailOpenItems(ctx, b.ID, f); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CloseBatch(ctx, b.ID, models.StatusPartial, finish(b), nil); err != nil {
				t.Fatal(err)
			}
		} else if err := s.FailUnstarted(ctx, b.ID, f); err != nil {
			t.Fatal(err)
		}
	}
}

// direct computes the report's action and error figures from the
// executions created since since (by actor, "" = everyone).
func direct(t *testing.T, db *gorm.DB, since time.Time, actor string) string {
	t.Helper()
	q := db.Where("created_at >= ?", since.UTC())
	if actor != "" {
		q = q.Where("actor_id = ?", actor)
	}
	var rows []models.Execution
	if err := q.Select("id, action_type_id, status, error_code, created_at, finished_at").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	type group struct{ action, status, code string }
	n, example := map[group]int64{}, map[group]string{}
	bins := map[string][]int{}
	for _, r := range rows {
		g := group{r.ActionTypeID, r.Status, r.ErrorCode}
		n[g]++
		example[g] = max(example[g], r.ID)
		if r.FinishedAt != nil {
			bins[r.ActionTypeID] = append(bins[r.ActionTypeID], models.DurationBin(r.CreatedAt, *r.FinishedAt))
		}
	}
	var out []string
	var failed []group
	for g, c := range n {
		if g.status == models.StatusFailed {
			failed = append(failed, g)
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %q %d", g.action, g.status, g.code, c))
	}
	// The page lists the TopErrors most frequent codes (ties by code and
	// action, "(no code)" for none).
	named := func(g group) string {
		if g.code == "" {
			return "(no code)" + g.action
		}
		return g.code + g.action
	}
	slices.SortFunc(failed, func(a, b group) int {
		if n[a] != n[b] {
			return int(n[b] - n[a])
		}
		return strings.Compare(named(a), named(b))
	})
	for _, g := range failed[:min(len(failed), insights.TopErrors)] {
		out = append(out, fmt.Sprintf("%s %s %q %d %s", g.action, g.status, g.code, n[g], example[g]))
	}
	for action, bs := range bins {
		slices.Sort(bs)
		rank := func(p int) time.Duration { return models.BinValue(bs[max((len(bs)*p+99)/100, 1)-1]) }
		out = append(out, fmt.Sprintf("%s timed %d p50 %v p95 %v", action, len(bs), rank(50), rank(95)))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// reported is r's figures in direct's form (every action: the test's log
// has fewer than the page's limit).
func reported(r *insights.Report) string {
	var out []string
	for _, a := range r.Actions {
		if a.Total != a.ByStatus[models.StatusQueued]+a.ByStatus[models.StatusRunning]+a.Finished() {
			out = append(out, fmt.Sprintf("%s total %d is not the sum of %v", a.ActionTypeID, a.Total, a.ByStatus))
		}
		for st, c := range a.ByStatus {
			if st != models.StatusFailed {
				out = append(out, fmt.Sprintf("%s %s %q %d", a.ActionTypeID, st, "", c))
			}
		}
		if a.Timed > 0 {
			out = append(out, fmt.Sprintf("%s timed %d p50 %v p95 %v", a.ActionTypeID, a.Timed, a.P50, a.P95))
		}
	}
	for _, e := range r.Errors {
		code := e.Code
		if code == "(no code)" {
			code = ""
		}
		out = append(out, fmt.Sprintf("%s %s %q %d %s", e.ActionTypeID, models.StatusFailed, code, e.Count, e.ExampleID))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// A database written by older versions — rows without any rollup
// (before version 3) and a rollup without histograms or totals (version
// 3) — upgraded by the rollup rebuild answers as a direct count does.
func TestReportAfterTheUpgrade(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		now := time.Now().UTC()
		rnd := rand.New(rand.NewSource(4))
		actions := []string{uuid.NewString(), uuid.NewString()}
		randomLog(ctx, t, db, rnd, now, actions)
		// Version 3's shape: the per-actor rollup's counts only.
		var nulls []string
		for i := range models.Bins {
			nulls = append(nulls, models.HistogramColumn(i)+" = NULL")
		}
		for _, q := range []string{"UPDATE execution_rollups SET " + strings.Join(nulls, ", "), "DELETE FROM execution_totals",
			"DELETE FROM data_migrations"} {
			if err := db.Exec(q).Error; err != nil {
				t.Fatal(err)
			}
		}
		// Rows an older version wrote without a rollup, finished.
		var old []models.Execution
		for i := range 20 {
			id := uuid.NewString()
			created := now.Add(-time.Duration(rnd.Int63n(int64(96 * time.Hour))))
			fin := created.Add(time.Duration(i*i) * 10 * time.Millisecond)
			old = append(old, models.Execution{ID: id, Kind: models.KindExecute, WorkflowID: "wf-" + id, ActionTypeID: actions[i%2],
				ActionTypeName: "old", ActorID: fmt.Sprint("u", i%3), Status: models.StatusSucceeded, CreatedAt: created, FinishedAt: &fin})
		}
		if err := db.Create(&old).Error; err != nil {
			t.Fatal(err)
		}
		if ran, err := execstore.New(db).BackfillRollup(ctx); err != nil || !ran {
			t.Fatalf("BackfillRollup = %v, %v", ran, err)
		}
		s := insights.New(db)
		for _, since := range []time.Time{now.Add(-24 * time.Hour), now.Add(-7 * 24 * time.Hour), now.Add(-50 * time.Hour)} {
			for _, actor := range []string{"", "u1"} {
				r, err := s.Report(ctx, insights.Query{Since: since, OnlyActorID: actor})
				if err != nil {
					t.Fatal(err)
				}
				if want, got := direct(t, db, since, actor), reported(r); got != want {
					t.Errorf("since %s, actor %q:\nreport %s\ndirect %s", since.Format(time.RFC3339Nano), actor, got, want)
				}
			}
		}
	})
}
