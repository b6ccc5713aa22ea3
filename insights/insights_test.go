package insights_test

import (
	"context"
	"fmt"
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

// log is a small action log: two actions, two actors, failures with codes,
// one row outside the window, deliveries and function runs.
type log struct {
	now                 time.Time
	aliceFail, bobFail  string
	bobDeliveryFailed   string
	alphaID, betaID     string
	aliceRuns, bobRuns  int
	alicePkg, sharedPkg string
}

func seed(t *testing.T, db *gorm.DB) log {
	t.Helper()
	ctx := context.Background()
	l := log{now: time.Now().UTC(), alphaID: uuid.NewString(), betaID: uuid.NewString()}
	for _, at := range []models.ActionType{{ID: l.alphaID, Name: "alpha", DisplayName: "Alpha action"}, {ID: l.betaID, Name: "beta"}} {
		if err := db.Create(&at).Error; err != nil {
			t.Fatal(err)
		}
	}
	var rows []models.Execution
	add := func(action, actor, status, code string, age, took time.Duration, notes []models.NotificationOutcome) string {
		id := uuid.NewString()
		created := l.now.Add(-age)
		ex := models.Execution{ID: id, Kind: models.KindExecute, WorkflowID: "wf-" + id, ActionTypeID: action,
			ActionTypeName: "recorded", ActorID: actor, Status: status, ErrorCode: code, CreatedAt: created}
		if status != models.StatusQueued {
			fin := created.Add(took)
			ex.FinishedAt = &fin
		}
		if notes != nil {
			ex.Notifications = models.NewJSON(notes)
			at := created.Add(took)
			ex.NotifiedAt = &at
		}
		rows = append(rows, ex)
		return id
	}
	// alice: alpha 3 succeeded (100, 200, 300 ms), 1 failed X; beta 1 queued.
	for i := 1; i <= 3; i++ {
		add(l.alphaID, "alice", models.StatusSucceeded, "", time.Duration(i)*time.Minute, time.Duration(i)*100*time.Millisecond,
			[]models.NotificationOutcome{{Channel: "in_app", Status: "delivered", Recipients: 1}})
	}
	l.aliceFail = add(l.alphaID, "alice", models.StatusFailed, "X", time.Hour, time.Second, nil)
	add(l.betaID, "alice", models.StatusQueued, "", 2*time.Hour, 0, nil)
	// bob: alpha 2 failed Y (one with a failed e-mail), beta 1 succeeded.
	l.bobFail = add(l.alphaID, "bob", models.StatusFailed, "Y", 3*time.Hour, 2*time.Second, nil)
	l.bobDeliveryFailed = add(l.alphaID, "bob", models.StatusFailed, "Y", 4*time.Hour, 2*time.Second,
		[]models.NotificationOutcome{{Channel: "email", Status: "failed", Recipients: 2}})
	add(l.betaID, "bob", models.StatusSucceeded, "", 5*time.Hour, 5*time.Second, nil)
	// Outside a 24h window.
	add(l.alphaID, "alice", models.StatusFailed, "OLD", 48*time.Hour, time.Second, nil)
	if err := execstore.New(db).Load(ctx, rows, 100); err != nil {
		t.Fatal(err)
	}
	pkgs := []models.FunctionPackage{{ID: uuid.NewString(), Name: "scorer", Runtime: "javascript"},
		{ID: uuid.NewString(), Name: "shared", Runtime: "javascript"}}
	if err := db.Create(&pkgs).Error; err != nil {
		t.Fatal(err)
	}
	l.alicePkg, l.sharedPkg = pkgs[0].Name, pkgs[1].Name
	var runs []models.FunctionRun
	run := func(pkg, version, actor, status string, ms int64) {
		runs = append(runs, models.FunctionRun{ID: uuid.NewString(), PackageID: pkg, Version: version, ActorID: actor,
			Kind: "action", Status: status, DurationMS: ms, CreatedAt: l.now.Add(-time.Minute)})
	}
	run(pkgs[0].ID, "1.0.0", "alice", "succeeded", 10)
	run(pkgs[0].ID, "1.0.0", "alice", "failed", 90)
	run(pkgs[1].ID, "2.0.0", "bob", "failed", 50)
	if err := db.Create(&runs).Error; err != nil {
		t.Fatal(err)
	}
	return l
}

// The report counts what the reader may see: everyone's with no actor
// named, one actor's own otherwise, and every example it links is one of
// the counted executions.
func TestReportFollowsTheReadRule(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		l := seed(t, db)
		s := insights.New(db)
		since := l.now.Add(-24 * time.Hour)
		all, err := s.Report(context.Background(), insights.Query{Since: since, Functions: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(all); got != "Alpha action total=6 succeeded=3 failed=3; beta total=2 queued=1 succeeded=1" {
			t.Errorf("everyone's actions: %s", got)
		}
		if got := errs(all); got != "Alpha action Y 2; Alpha action X 1" {
			t.Errorf("everyone's errors: %s", got)
		}
		if e := all.Errors[1]; e.ExampleID != l.aliceFail {
			t.Errorf("example of X = %s, want %s", e.ExampleID, l.aliceFail)
		}
		if got := fmt.Sprintf("%+v", all.Channels); !strings.Contains(got, "Channel:email Delivered:0 Failed:1") ||
			!strings.Contains(got, l.bobDeliveryFailed) || !strings.Contains(got, "Channel:in_app Delivered:3") {
			t.Errorf("everyone's deliveries: %s", got)
		}
		if got := funcs(all); got != "scorer@1.0.0 runs=2 failures=1 p95=90ms; shared@2.0.0 runs=1 failures=1 p95=50ms" {
			t.Errorf("everyone's function runs: %s", got)
		}

		alice, err := s.Report(context.Background(), insights.Query{Since: since, OnlyActorID: "alice", Functions: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(alice); got != "Alpha action total=4 succeeded=3 failed=1; beta total=1 queued=1" {
			t.Errorf("alice's actions: %s", got)
		}
		if got := errs(alice); got != "Alpha action X 1" {
			t.Errorf("alice's errors: %s", got)
		}
		a := alice.Actions[0]
		// Durations 100, 200, 300 ms and 1 s: p50 is 200 ms's bin, p95 1 s's.
		p50, p95 := binOf(200*time.Millisecond), binOf(time.Second)
		if a.Timed != 4 || a.P50 != p50 || a.P95 != p95 || int(a.SuccessRate()) != 75 {
			t.Errorf("alice's alpha: timed %d p50 %v p95 %v rate %v, want p50 %v p95 %v", a.Timed, a.P50, a.P95, a.SuccessRate(), p50, p95)
		}
		if got := fmt.Sprintf("%+v", alice.Channels); strings.Contains(got, "email") || strings.Contains(got, l.bobDeliveryFailed) {
			t.Errorf("alice's deliveries show bob's: %s", got)
		}
		if got := funcs(alice); got != "scorer@1.0.0 runs=2 failures=1 p95=90ms" {
			t.Errorf("alice's function runs: %s", got)
		}
	})
}

// An action deleted since is named by the name its executions recorded.
func TestDeletedActionKeepsItsRecordedName(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		l := seed(t, db)
		if err := db.Delete(&models.ActionType{}, "id = ?", l.betaID).Error; err != nil {
			t.Fatal(err)
		}
		r, err := insights.New(db).Report(context.Background(), insights.Query{Since: l.now.Add(-24 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(r); !strings.Contains(got, "recorded (deleted) total=2") {
			t.Errorf("deleted action: %s", got)
		}
	})
}

// On SQLite every statement the report runs on executions, function runs
// or the rollups searches an index by range or key: none scans a table or
// a whole index (Postgres' plans are measured by cmd/insightsbench over 1M rows,
// where its planner has statistics to choose by).
func TestReportSearchesIndexes(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	l := seed(t, db)
	var stmts []string
	var vars [][]any
	capture := func(tx *gorm.DB) {
		stmts = append(stmts, tx.Statement.SQL.String())
		vars = append(vars, append([]any(nil), tx.Statement.Vars...))
	}
	// Find and Take run as queries, Scan as rows.
	if err := db.Callback().Query().After("gorm:query").Register("test:capture", capture); err != nil {
		t.Fatal(err)
	}
	if err := db.Callback().Row().After("gorm:row").Register("test:capture", capture); err != nil {
		t.Fatal(err)
	}
	for _, actor := range []string{"", "alice"} {
		if _, err := insights.New(db).Report(context.Background(), insights.Query{Since: l.now.Add(-24 * time.Hour),
			OnlyActorID: actor, Functions: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range []error{db.Callback().Query().Remove("test:capture"), db.Callback().Row().Remove("test:capture")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	checked, rolled := 0, 0
	for i, q := range stmts {
		var plan []struct {
			ID, Parent, Notused int
			Detail              string
		}
		if err := db.Raw("EXPLAIN QUERY PLAN "+q, vars[i]...).Scan(&plan).Error; err != nil {
			t.Fatalf("explain %s: %v", q, err)
		}
		for _, p := range plan {
			if strings.Contains(p.Detail, "execution_rollups") || strings.Contains(p.Detail, "execution_totals") {
				// The rollups: searched by the window's first hour or day,
				// the per-actor one by the actor too, or, for everyone's
				// hours before the first midnight, by those hours.
				rolled++
				searched := strings.Contains(p.Detail, "start>?") || strings.Contains(p.Detail, "actor_id=? AND hour>?") ||
					strings.Contains(p.Detail, "(hour>? AND hour<?)")
				if !strings.HasPrefix(p.Detail, "SEARCH ") || !searched {
					t.Errorf("%s\nplans %q", q, p.Detail)
				}
				continue
			}
			if !strings.Contains(p.Detail, "executions") && !strings.Contains(p.Detail, "function_runs") {
				continue
			}
			checked++
			// A search by the window (not by the actor alone), or the name
			// of a deleted action by its id.
			bounded := strings.Contains(p.Detail, "created_at>?") || strings.Contains(p.Detail, "notified_at>?") ||
				strings.Contains(q, "action_type_name")
			if !strings.HasPrefix(p.Detail, "SEARCH ") || !bounded {
				t.Errorf("%s\nplans %q", q, p.Detail)
			}
		}
	}
	if checked < 8 || rolled < 2 {
		t.Errorf("checked %d plan lines (%d of the rollups) of %d statements; the capture missed the report's queries", checked, rolled, len(stmts))
	}
}

// binOf is the duration the report gives for d: its bin's value.
func binOf(d time.Duration) time.Duration {
	var t time.Time
	return models.BinValue(models.DurationBin(t, t.Add(d)))
}

func summary(r *insights.Report) string {
	var out []string
	for _, a := range r.Actions {
		s := fmt.Sprintf("%s total=%d", a.Name, a.Total)
		for _, st := range []string{models.StatusQueued, models.StatusRunning, models.StatusSucceeded, models.StatusFailed} {
			if n := a.ByStatus[st]; n > 0 {
				s += fmt.Sprintf(" %s=%d", st, n)
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func errs(r *insights.Report) string {
	var out []string
	for _, e := range r.Errors {
		out = append(out, fmt.Sprintf("%s %s %d", e.ActionName, e.Code, e.Count))
	}
	return strings.Join(out, "; ")
}

func funcs(r *insights.Report) string {
	var out []string
	for _, f := range r.Functions {
		out = append(out, fmt.Sprintf("%s@%s runs=%d failures=%d p95=%v", f.Package, f.Version, f.Runs, f.Failures, f.P95))
	}
	return strings.Join(out, "; ")
}
