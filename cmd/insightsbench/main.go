// Command insightsbench measures the console's Insights report over a
// large action log: it loads -rows execution rows straight into the
// database (execstore.Load, large transactions) spread over -days days,
// ANALYZEs, then times insights.Report for each window, as an auditor
// (everyone's executions) and as one actor (the read rule), p50/p95.
//
//	go run ./cmd/insightsbench [-db sqlite:/tmp/x.db | -db postgres://...] [-rows 1000000] [-runs 30]
//
// A Postgres database is emptied first. With -reuse it measures the rows
// -db holds, after migrating the database to this version first (a
// database loaded by an older version gets its rollups rebuilt, timed).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/insights"
	"github.com/ontoflow/ontoflow/models"
)

func main() {
	dsn := flag.String("db", "", "database (default: a new SQLite file in a temporary directory); a Postgres database is emptied first")
	rows := flag.Int("rows", 1_000_000, "execution rows to load")
	days := flag.Int("days", 90, "days the rows are spread over, ending now")
	actions := flag.Int("actions", 20, "action types")
	actors := flag.Int("actors", 50, "actors")
	runs := flag.Int("runs", 30, "timed reports per shape")
	reuse := flag.Bool("reuse", false, "measure the rows -db already holds (loaded by an earlier run with the same -days; the windows end now), after migrating the database to this version (timed: the rollups' rebuild)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the timed reports to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "insightsbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	cfg := config{rows: *rows, days: *days, actions: *actions, actors: *actors, runs: *runs, reuse: *reuse}
	if err := run(context.Background(), *dsn, cfg); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "insightsbench:", err)
		os.Exit(1)
	}
}

type config struct {
	rows, days, actions, actors, runs int
	reuse                             bool
}

func run(ctx context.Context, dsn string, cfg config) error {
	if dsn == "" {
		dir, err := os.MkdirTemp("", "insightsbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dsn = "sqlite:" + filepath.Join(dir, "bench.db")
	}
	db, err := models.Open(ctx, dsn)
	if err != nil {
		return err
	}
	if cfg.reuse {
		if err := upgrade(ctx, db); err != nil {
			return err
		}
		return measure(ctx, db, cfg)
	}
	if models.IsPostgres(db) {
		for _, q := range []string{"DROP SCHEMA public CASCADE", "CREATE SCHEMA public"} {
			if err := db.Exec(q).Error; err != nil {
				return fmt.Errorf("empty the database: %w", err)
			}
		}
	}
	if err := models.Migrate(ctx, db); err != nil {
		return err
	}
	t0 := time.Now()
	if err := load(ctx, db, cfg, time.Now().UTC()); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "loaded %d executions in %s\n", cfg.rows, time.Since(t0).Round(time.Millisecond))
	if err := analyze(db); err != nil {
		return err
	}
	return measure(ctx, db, cfg)
}

// upgrade brings a database loaded by an earlier version up to this one:
// the schema, then the rollups' rebuild (execstore.BackfillRollup) and
// the hourly totals' removal (execstore.DropHourTotals), timed.
func upgrade(ctx context.Context, db *gorm.DB) error {
	v, err := models.StoredSchemaVersion(ctx, db)
	if err != nil {
		return err
	}
	// Only when older: on SQLite, gorm's migrator copies the executions
	// table again on every migration of a loaded database (see
	// BENCHMARKS.md), minutes at 1M rows.
	if v < models.SchemaVersion {
		if err := models.Migrate(ctx, db); err != nil {
			return err
		}
	}
	t0 := time.Now()
	store := execstore.New(db)
	ran, err := store.BackfillRollup(ctx)
	if err != nil {
		return err
	}
	if ran {
		fmt.Fprintf(os.Stderr, "rebuilt the execution rollups in %s\n", time.Since(t0).Round(time.Millisecond))
	}
	t0 = time.Now()
	dropped, err := store.DropHourTotals(ctx)
	if err != nil {
		return err
	}
	if dropped > 0 {
		fmt.Fprintf(os.Stderr, "deleted %d hourly totals of version 4 in %s\n", dropped, time.Since(t0).Round(time.Millisecond))
	}
	if !ran && dropped == 0 {
		return nil
	}
	return analyze(db)
}

// analyze gathers the planners' statistics after a load or a rebuild.
func analyze(db *gorm.DB) error {
	if err := db.Exec("ANALYZE").Error; err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	if models.IsPostgres(db) {
		// Index-only scans need the visibility map a vacuum sets, as
		// autovacuum would after a load.
		for _, table := range []string{"executions", "execution_rollups", "execution_totals"} {
			if err := db.Exec("VACUUM ANALYZE " + table).Error; err != nil {
				return fmt.Errorf("vacuum %s: %w", table, err)
			}
		}
	}
	return nil
}

// measure times the report per window and reader; the one actor is the
// busiest.
func measure(ctx context.Context, db *gorm.DB, cfg config) error {
	now := time.Now().UTC()
	var actor string
	if err := db.Model(&models.Execution{}).Select("actor_id").Group("actor_id").Order("COUNT(*) DESC").Limit(1).Scan(&actor).Error; err != nil {
		return err
	}
	var rows int64
	if err := db.Model(&models.Execution{}).Count(&rows).Error; err != nil {
		return err
	}
	cfg.rows = int(rows)
	fmt.Printf("Dialect %s, %d executions over %d days, %d actions, %d actors; %d reports per shape.\n",
		models.Dialect(db), cfg.rows, cfg.days, cfg.actions, cfg.actors, cfg.runs)
	fmt.Printf("| window | rows in window | reader | p50 ms | p95 ms |\n|---|---|---|---|---|\n")
	s := insights.New(db)
	for _, w := range insights.Windows {
		var inWindow int64
		if err := db.Model(&models.Execution{}).Where("created_at >= ?", now.Add(-w.Span)).Count(&inWindow).Error; err != nil {
			return err
		}
		for _, reader := range []struct{ name, actor string }{{"auditor", ""}, {"busiest actor", actor}} {
			q := insights.Query{Since: time.Now().Add(-w.Span), OnlyActorID: reader.actor, Functions: true}
			ts := make([]time.Duration, 0, cfg.runs)
			for range cfg.runs + 2 {
				t := time.Now()
				if _, err := s.Report(ctx, q); err != nil {
					return err
				}
				ts = append(ts, time.Since(t))
			}
			ts = ts[2:] // warm-up
			slices.Sort(ts)
			fmt.Printf("| %s | %d | %s | %.1f | %.1f |\n", w.Name, inWindow, reader.name, ms(insights.Percentile(ts, 50)), ms(insights.Percentile(ts, 95)))
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// load inserts cfg.rows executions, 20,000 to a transaction: 90%
// succeeded, 8% failed with one of five codes, the rest running or
// queued; one in ten notified in-app (one in a hundred of those failed).
func load(ctx context.Context, db *gorm.DB, cfg config, now time.Time) error {
	r := rand.New(rand.NewSource(31))
	actionIDs := make([]string, cfg.actions)
	for i := range actionIDs {
		at := models.ActionType{ID: uuid.NewString(), Name: fmt.Sprintf("action-%02d", i)}
		if err := db.WithContext(ctx).Create(&at).Error; err != nil {
			return fmt.Errorf("create action type: %w", err)
		}
		actionIDs[i] = at.ID
	}
	actorIDs := make([]string, cfg.actors)
	for i := range actorIDs {
		actorIDs[i] = uuid.NewString()
	}
	codes := []string{"ActionValidationFailed", "ActionUnauthorized", "WebhookFailed", "FunctionFailed", "StaleObject"}
	store := execstore.New(db)
	span := time.Duration(cfg.days) * 24 * time.Hour
	const perTx = 20_000
	batch := make([]models.Execution, 0, perTx)
	for i := range cfg.rows {
		id := uuid.NewString()
		// Skewed: a few actions and actors run most.
		action := actionIDs[min(int(r.ExpFloat64()*float64(cfg.actions)/4), cfg.actions-1)]
		actor := actorIDs[min(int(r.ExpFloat64()*float64(cfg.actors)/5), cfg.actors-1)]
		created := now.Add(-time.Duration(r.Int63n(int64(span))))
		ex := models.Execution{ID: id, Kind: models.KindExecute, WorkflowID: "action/bench/" + id, ActionTypeID: action,
			ActionTypeName: "bench", ActorID: actor, ActorName: "bench", CreatedAt: created,
			Parameters: models.NewNumJSON(map[string]any{"n": i})}
		p := r.Intn(100)
		took := time.Duration(20+r.ExpFloat64()*80) * time.Millisecond
		fin := created.Add(took)
		switch {
		case p < 90:
			ex.Status, ex.StartedAt, ex.FinishedAt = models.StatusSucceeded, &created, &fin
		case p < 98:
			ex.Status, ex.StartedAt, ex.FinishedAt = models.StatusFailed, &created, &fin
			ex.ErrorCode, ex.ErrorMessage = codes[r.Intn(len(codes))], "failed in the bench"
		case p < 99:
			ex.Status, ex.StartedAt = models.StatusRunning, &created
		default:
			ex.Status = models.StatusQueued
		}
		if ex.FinishedAt != nil && r.Intn(10) == 0 {
			outcome := "delivered"
			if r.Intn(100) == 0 {
				outcome = "failed"
			}
			ex.Notifications = models.NewJSON([]models.NotificationOutcome{{Channel: "in_app", Recipients: 1, Status: outcome}})
			ex.NotifiedAt = &fin
		}
		batch = append(batch, ex)
		if len(batch) == perTx || i == cfg.rows-1 {
			if err := store.Load(ctx, batch, 100); err != nil {
				return err
			}
			batch = batch[:0]
			if (i+1)%200_000 == 0 {
				fmt.Fprintf(os.Stderr, "  %d rows\n", i+1)
			}
		}
	}
	return nil
}
