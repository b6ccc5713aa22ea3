// Package insights summarizes the action log for the console's Insights
// page: per action over a window, executions by outcome, success rate and
// p50/p95 duration, the most frequent error codes each with an example
// execution, function package health and notification delivery failures.
//
// Every figure is read under the caller's read rule, the action log's:
// one's own executions (and function runs) unless the caller may audit
// every execution. Each query is an aggregate over an index that covers
// it (models.Execution's idx_exec_window, idx_exec_action_time,
// idx_exec_notified; models.FunctionRun's idx_function_run_window), so its
// cost is the window's index entries, never the table. Percentiles and
// delivery outcomes are not kept as aggregates: they are computed here
// from the latest SampleSize finished executions of each action (and the
// latest DeliverySample notified ones) in the window, a bounded read;
// the page says so.
package insights

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// Windows are the periods the page offers, by their names.
var Windows = []Window{{"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}}

// Window is a period ending now.
type Window struct {
	Name string
	Span time.Duration
}

// WindowNamed is the window called name, or the first (24h) and false.
func WindowNamed(name string) (Window, bool) {
	for _, w := range Windows {
		if w.Name == name {
			return w, true
		}
	}
	return Windows[0], false
}

const (
	// SampleSize bounds the finished executions per action whose
	// durations make its percentiles (the latest in the window).
	SampleSize = 1000
	// DeliverySample bounds the notified executions whose deliveries are
	// counted (the latest in the window).
	DeliverySample = 2000
	// FunctionSample bounds the runs per package whose durations make its
	// versions' p95.
	FunctionSample = 1000
	// TopErrors is how many error codes the page lists.
	TopErrors = 10
	// MaxActions bounds the actions the page charts (the busiest).
	MaxActions = 50
)

// Query is what to summarize.
type Query struct {
	Since time.Time
	// OnlyActorID limits every figure to one actor's executions and runs
	// (a caller without the audit permission); "" = everyone's.
	OnlyActorID string
	// Functions: also summarize function runs (the caller may read
	// function packages).
	Functions bool
}

// Report is the page's figures.
type Report struct {
	Since     time.Time
	Actions   []ActionStats
	Errors    []ErrorStat
	Functions []FunctionStat
	// Channels are delivery outcomes per channel over the latest
	// DeliveriesRead notified executions.
	Channels       []ChannelStat
	DeliveriesRead int
	// MoreActions: actions beyond MaxActions were left out.
	MoreActions int
}

// ActionStats are one action's executions in the window.
type ActionStats struct {
	ActionTypeID, Name string
	// ByStatus counts executions by status (models.Status*).
	ByStatus map[string]int64
	Total    int64
	// Sampled is how many finished executions the percentiles read.
	Sampled  int
	P50, P95 time.Duration
}

// Finished counts the executions that reached an outcome.
func (a ActionStats) Finished() int64 {
	return a.ByStatus[models.StatusSucceeded] + a.ByStatus[models.StatusFailed] + a.ByStatus[models.StatusPartial]
}

// SuccessRate is succeeded over finished, in percent (0 with none
// finished).
func (a ActionStats) SuccessRate() float64 {
	f := a.Finished()
	if f == 0 {
		return 0
	}
	return 100 * float64(a.ByStatus[models.StatusSucceeded]) / float64(f)
}

// ErrorStat is one error code of one action, with one execution that
// failed with it.
type ErrorStat struct {
	ActionTypeID, ActionName, Code string
	Count                          int64
	ExampleID                      string
}

// FunctionStat is one function package version's runs in the window.
type FunctionStat struct {
	Package, Version string
	Runs, Failures   int64
	// Sampled is how many runs the p95 read.
	Sampled int
	P95     time.Duration
}

// ChannelStat is one channel's delivery outcomes (delivered, failed,
// skipped) over the notified executions read.
type ChannelStat struct {
	Channel                    string
	Delivered, Failed, Skipped int
	// FailedExample is an execution with a failed delivery here.
	FailedExample string
}

// Service reads the figures from the database.
type Service struct{ db *gorm.DB }

// New returns a Service over db.
func New(db *gorm.DB) *Service { return &Service{db: db} }

// Report summarizes the action log under q.
func (s *Service) Report(ctx context.Context, q Query) (*Report, error) {
	// Times are stored in UTC and SQLite compares them as text.
	q.Since = q.Since.UTC()
	r := &Report{Since: q.Since}
	if err := s.outcomes(ctx, q, r); err != nil {
		return nil, err
	}
	if err := s.percentiles(ctx, q, r); err != nil {
		return nil, err
	}
	if err := s.deliveries(ctx, q, r); err != nil {
		return nil, err
	}
	if q.Functions {
		if err := s.functions(ctx, q, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// executions are the rows the reader may see. actor_id is filtered in the
// window's index; SQLite, without statistics, would rather search the
// actor_id index by the equality and read every row of a busy actor, so
// there the term is written +actor_id, which no index serves.
func (s *Service) executions(ctx context.Context, q Query) *gorm.DB {
	db := s.db.WithContext(ctx).Model(&models.Execution{})
	if q.OnlyActorID != "" {
		col := "actor_id"
		if s.db.Dialector.Name() == "sqlite" {
			col = "+actor_id"
		}
		db = db.Where(col+" = ?", q.OnlyActorID)
	}
	return db
}

// outcomeRow is one action, status and error code's count.
type outcomeRow struct {
	ActionTypeID, Status, ErrorCode string
	N                               int64
	Example                         string
}

// outcomes counts the window's executions per action, status and error
// code, with the greatest id of each group as its example: the whole
// hours from the rollup (models.ExecutionRollup, kept by execstore), the
// part of an hour the window starts in from idx_exec_window. The sum is
// exact: it counts the same rows a count over the executions would.
func (s *Service) outcomes(ctx context.Context, q Query, r *Report) error {
	hours := q.Since.Truncate(time.Hour)
	if hours.Before(q.Since) {
		hours = hours.Add(time.Hour)
	}
	var rolled, edge []outcomeRow
	db := s.db.WithContext(ctx).Model(&models.ExecutionRollup{})
	if q.OnlyActorID != "" {
		db = db.Where("actor_id = ?", q.OnlyActorID)
	}
	err := db.Select("action_type_id, status, error_code, SUM(n) AS n, MAX(example_id) AS example").
		Where("hour >= ?", hours).Group("action_type_id, status, error_code").Having("SUM(n) <> 0").Scan(&rolled).Error
	if err != nil {
		return fmt.Errorf("count executions by outcome from the rollup: %w", err)
	}
	if hours.After(q.Since) {
		if edge, err = s.edgeOutcomes(ctx, q, hours); err != nil {
			return err
		}
	}
	by := map[string]*ActionStats{}
	type group struct{ action, status, code string }
	groups := map[group]*outcomeRow{}
	var rows []*outcomeRow
	for _, row := range append(rolled, edge...) {
		k := group{row.ActionTypeID, row.Status, row.ErrorCode}
		if g := groups[k]; g != nil {
			g.N += row.N
			g.Example = max(g.Example, row.Example)
			continue
		}
		row := row
		groups[k] = &row
		rows = append(rows, &row)
	}
	for _, row := range rows {
		a := by[row.ActionTypeID]
		if a == nil {
			a = &ActionStats{ActionTypeID: row.ActionTypeID, ByStatus: map[string]int64{}}
			by[row.ActionTypeID] = a
		}
		a.ByStatus[row.Status] += row.N
		a.Total += row.N
		if row.Status == models.StatusFailed {
			r.Errors = append(r.Errors, ErrorStat{ActionTypeID: row.ActionTypeID, Code: codeOrUnknown(row.ErrorCode),
				Count: row.N, ExampleID: row.Example})
		}
	}
	for _, a := range by {
		r.Actions = append(r.Actions, *a)
	}
	sort.Slice(r.Actions, func(i, j int) bool {
		a, b := r.Actions[i], r.Actions[j]
		return a.Total > b.Total || a.Total == b.Total && a.ActionTypeID < b.ActionTypeID
	})
	if len(r.Actions) > MaxActions {
		r.MoreActions = len(r.Actions) - MaxActions
		r.Actions = r.Actions[:MaxActions]
	}
	sort.Slice(r.Errors, func(i, j int) bool {
		a, b := r.Errors[i], r.Errors[j]
		return a.Count > b.Count || a.Count == b.Count && a.Code+a.ActionTypeID < b.Code+b.ActionTypeID
	})
	r.Errors = r.Errors[:min(len(r.Errors), TopErrors)]
	return s.name(ctx, r)
}

// edgeOutcomes counts the executions created from q.Since to hours (the
// first whole hour) over idx_exec_window: at most an hour of rows.
func (s *Service) edgeOutcomes(ctx context.Context, q Query, hours time.Time) ([]outcomeRow, error) {
	var rows []outcomeRow
	db := s.executions(ctx, q)
	if s.db.Dialector.Name() == "sqlite" {
		// With statistics SQLite skip-scans idx_exec_action_time and reads
		// each row for its status; this index answers from itself.
		db = db.Table("executions INDEXED BY idx_exec_window")
	}
	err := db.Select("action_type_id, status, error_code, COUNT(*) AS n, MAX(id) AS example").
		Where("created_at >= ? AND created_at < ?", q.Since, hours).
		Group("action_type_id, status, error_code").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count executions by outcome: %w", err)
	}
	return rows, nil
}

func codeOrUnknown(c string) string {
	if c == "" {
		return "(no code)"
	}
	return c
}

// name names the actions by their display names, or, for an action since
// deleted, by the name its latest execution recorded.
func (s *Service) name(ctx context.Context, r *Report) error {
	ids := make([]string, 0, len(r.Actions)+len(r.Errors))
	for _, a := range r.Actions {
		ids = append(ids, a.ActionTypeID)
	}
	for _, e := range r.Errors {
		ids = append(ids, e.ActionTypeID)
	}
	var types []models.ActionType
	if err := s.db.WithContext(ctx).Select("id", "name", "display_name").Where("id IN ?", ids).Find(&types).Error; err != nil {
		return fmt.Errorf("name the actions: %w", err)
	}
	names := map[string]string{}
	for _, t := range types {
		names[t.ID] = t.Name
		if t.DisplayName != "" {
			names[t.ID] = t.DisplayName
		}
	}
	for _, id := range ids {
		if names[id] != "" {
			continue
		}
		var recorded string
		err := s.db.WithContext(ctx).Model(&models.Execution{}).Select("action_type_name").
			Where("action_type_id = ?", id).Limit(1).Scan(&recorded).Error
		if err != nil {
			return fmt.Errorf("name deleted action %s: %w", id, err)
		}
		names[id] = recorded + " (deleted)"
	}
	for i := range r.Actions {
		r.Actions[i].Name = names[r.Actions[i].ActionTypeID]
	}
	for i := range r.Errors {
		r.Errors[i].ActionName = names[r.Errors[i].ActionTypeID]
	}
	return nil
}

// percentiles reads, per action charted, the latest SampleSize finished
// executions in the window from idx_exec_action_time and ranks their
// durations (created to finished: what the caller waited).
func (s *Service) percentiles(ctx context.Context, q Query, r *Report) error {
	for i := range r.Actions {
		a := &r.Actions[i]
		var rows []struct{ CreatedAt, FinishedAt time.Time }
		err := s.executions(ctx, q).Select("created_at, finished_at").
			Where("action_type_id = ? AND created_at >= ? AND finished_at IS NOT NULL", a.ActionTypeID, q.Since).
			Order("created_at DESC").Limit(SampleSize).Scan(&rows).Error
		if err != nil {
			return fmt.Errorf("read durations of action %s: %w", a.ActionTypeID, err)
		}
		ds := make([]time.Duration, 0, len(rows))
		for _, row := range rows {
			ds = append(ds, max(row.FinishedAt.Sub(row.CreatedAt), 0))
		}
		a.Sampled = len(ds)
		a.P50, a.P95 = Percentile(ds, 50), Percentile(ds, 95)
	}
	return nil
}

// Percentile is the nearest-rank p-th percentile of ds (sorted in
// place): the smallest duration at least p% took no longer than; 0 for
// none.
func Percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	rank := (len(ds)*p + 99) / 100
	return ds[max(rank, 1)-1]
}

// deliveries counts notification outcomes per channel over the latest
// DeliverySample executions notified in the window (idx_exec_notified).
func (s *Service) deliveries(ctx context.Context, q Query, r *Report) error {
	var rows []struct {
		ID            string
		Notifications models.JSON[[]models.NotificationOutcome]
	}
	err := s.executions(ctx, q).Select("id, notifications").
		Where("notified_at IS NOT NULL AND notified_at >= ?", q.Since).
		Order("notified_at DESC").Limit(DeliverySample).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("read delivery outcomes: %w", err)
	}
	r.DeliveriesRead = len(rows)
	by := map[string]*ChannelStat{}
	for _, row := range rows {
		for _, n := range row.Notifications.V {
			c := by[n.Channel]
			if c == nil {
				c = &ChannelStat{Channel: n.Channel}
				by[n.Channel] = c
			}
			switch n.Status {
			case "delivered":
				c.Delivered++
			case "failed":
				c.Failed++
				if c.FailedExample == "" {
					c.FailedExample = row.ID
				}
			default:
				c.Skipped++
			}
		}
	}
	for _, c := range by {
		r.Channels = append(r.Channels, *c)
	}
	sort.Slice(r.Channels, func(i, j int) bool { return r.Channels[i].Channel < r.Channels[j].Channel })
	return nil
}

// functions counts the window's function runs per package, version and
// status (idx_function_run_window) and ranks each package's latest
// FunctionSample durations per version.
func (s *Service) functions(ctx context.Context, q Query, r *Report) error {
	runs := func() *gorm.DB {
		db := s.db.WithContext(ctx).Model(&models.FunctionRun{})
		if q.OnlyActorID != "" {
			db = db.Where("actor_id = ?", q.OnlyActorID)
		}
		return db
	}
	var rows []struct {
		PackageID, Version, Status string
		N                          int64
	}
	err := runs().Select("package_id, version, status, COUNT(*) AS n").Where("created_at >= ?", q.Since).
		Group("package_id, version, status").Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("count function runs: %w", err)
	}
	type key struct{ pkg, version string }
	by := map[key]*FunctionStat{}
	pkgs := map[string]bool{}
	for _, row := range rows {
		k := key{row.PackageID, row.Version}
		f := by[k]
		if f == nil {
			f = &FunctionStat{Package: row.PackageID, Version: row.Version}
			by[k] = f
		}
		f.Runs += row.N
		if row.Status == "failed" {
			f.Failures += row.N
		}
		pkgs[row.PackageID] = true
	}
	names := map[string]string{}
	for id := range pkgs {
		var durs []struct {
			Version    string
			DurationMS int64
		}
		err := runs().Select("version, duration_ms").Where("package_id = ? AND created_at >= ?", id, q.Since).
			Order("created_at DESC").Limit(FunctionSample).Scan(&durs).Error
		if err != nil {
			return fmt.Errorf("read durations of function package %s: %w", id, err)
		}
		per := map[string][]time.Duration{}
		for _, d := range durs {
			per[d.Version] = append(per[d.Version], time.Duration(d.DurationMS)*time.Millisecond)
		}
		for v, ds := range per {
			if f := by[key{id, v}]; f != nil {
				f.Sampled, f.P95 = len(ds), Percentile(ds, 95)
			}
		}
		var p models.FunctionPackage
		if err := s.db.WithContext(ctx).Select("name").Take(&p, "id = ?", id).Error; err == nil {
			names[id] = p.Name
		} else {
			names[id] = id
		}
	}
	for _, f := range by {
		f.Package = names[f.Package]
		r.Functions = append(r.Functions, *f)
	}
	sort.Slice(r.Functions, func(i, j int) bool {
		a, b := r.Functions[i], r.Functions[j]
		return a.Package < b.Package || a.Package == b.Package && a.Version < b.Version
	})
	return nil
}
