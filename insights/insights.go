// Package insights summarizes the action log for the console's Insights
// page: per action over a window, executions by outcome, success rate and
// p50/p95 duration, the most frequent error codes each with an example
// execution, function package health and notification delivery failures.
//
// Every figure is read under the caller's read rule, the action log's:
// one's own executions (and function runs) unless the caller may audit
// every execution. Counts and durations come from the rollups execstore
// keeps (models.ExecutionRollup per actor and hour for a reader of their
// own, models.ExecutionTotal per day for a reader of everyone's, with the
// hours before the window's first midnight from the per-actor rollup
// summed over the actors) and, for the part of an hour the window starts
// in, from the executions (idx_exec_window): a 30-day window reads about
// 30 day rows per action, status and error code, and at most 23 hours of
// the per-actor rollup. Percentiles come from the
// rollups' duration histograms (fixed log-scale bins, models.DurationBin):
// every finished execution in the window counts, and a percentile is
// exact up to its bin's width (within a factor of about 1.22). Delivery
// outcomes are not kept as aggregates: they are counted over the latest
// DeliverySample notified executions in the window (idx_exec_notified),
// a bounded read, and the page says so; function runs are counted over
// idx_function_run_window, their p95 over each package's latest
// FunctionSample runs.
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
	// Timed is how many finished executions the percentiles rank (those
	// with a finished time).
	Timed    int64
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

// outcomeRow is one action, status and error code's count, with the
// durations of its finished executions by histogram bin.
type outcomeRow struct {
	ActionTypeID, Status, ErrorCode string
	N                               int64
	Example                         string
	models.Histogram
}

// outcomeCols sums a rollup's rows into outcomeRows.
var outcomeCols = func() string {
	cols := "action_type_id, status, error_code, SUM(n) AS n, MAX(example_id) AS example"
	for i := range models.Bins {
		c := models.HistogramColumn(i)
		cols += ", COALESCE(SUM(" + c + "), 0) AS " + c
	}
	return cols
}()

// outcomes counts the window's executions per action, status and error
// code, with the greatest id of each group as its example, and ranks each
// action's durations by their histogram bins (outcomeRows). The sum is
// exact: it counts the same rows a count over the executions would, and
// the percentiles are those of the window's executions up to the width
// of a bin.
func (s *Service) outcomes(ctx context.Context, q Query, r *Report) error {
	rows, err := s.outcomeRows(ctx, q)
	if err != nil {
		return err
	}
	by := map[string]*ActionStats{}
	hists := map[string]*[models.Bins]int64{}
	type group struct{ action, status, code string }
	groups := map[group]*outcomeRow{}
	var merged []*outcomeRow
	for _, row := range rows {
		h := hists[row.ActionTypeID]
		if h == nil {
			h = &[models.Bins]int64{}
			hists[row.ActionTypeID] = h
		}
		for i, n := range row.Counts() {
			h[i] += n
		}
		k := group{row.ActionTypeID, row.Status, row.ErrorCode}
		if g := groups[k]; g != nil {
			g.N += row.N
			g.Example = max(g.Example, row.Example)
			continue
		}
		row := row
		groups[k] = &row
		merged = append(merged, &row)
	}
	for _, row := range merged {
		if row.N == 0 {
			continue
		}
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
	for id, a := range by {
		h := hists[id]
		for _, n := range h {
			a.Timed += n
		}
		a.P50, a.P95 = BinPercentile(h, 50), BinPercentile(h, 95)
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

// outcomeRows reads the window in parts: the part of an hour it starts in
// from the executions (edgeOutcomes); then, for a reader limited to their
// own executions, every whole hour from the per-actor rollup
// (models.ExecutionRollup); for a reader of everyone's, the whole days
// from the first midnight from the totals (models.ExecutionTotal), whose
// rows hold every actor at once, and the whole hours before it from the
// per-actor rollup over every actor (its primary key's range on hour).
// Those hours were hourly totals in schema version 4; the rollup holds
// about five times their rows (23 hours at 1M executions over 90 days,
// 50 actors: 6,192 rows against 1,273, ~13 ms of CPU against ~5 in the
// sqlite3 shell), well within the page's budget, and dropping the hourly
// totals saved two of six rollup rows on every status change
// (execstore/rollup.go).
// The rows may repeat a group; the caller sums them.
func (s *Service) outcomeRows(ctx context.Context, q Query) ([]outcomeRow, error) {
	hours := ceil(q.Since, time.Hour)
	var rows []outcomeRow
	if hours.After(q.Since) {
		edge, err := s.edgeOutcomes(ctx, q, hours)
		if err != nil {
			return nil, err
		}
		rows = append(rows, edge...)
	}
	read := func(what string, db *gorm.DB) error {
		var part []outcomeRow
		if err := db.Select(outcomeCols).Group("action_type_id, status, error_code").Scan(&part).Error; err != nil {
			return fmt.Errorf("count executions by outcome from %s: %w", what, err)
		}
		rows = append(rows, part...)
		return nil
	}
	db := func() *gorm.DB { return s.db.WithContext(ctx) }
	if q.OnlyActorID != "" {
		err := read("the rollup", db().Model(&models.ExecutionRollup{}).Where("actor_id = ? AND hour >= ?", q.OnlyActorID, hours))
		return rows, err
	}
	days := ceil(hours, 24*time.Hour)
	if days.After(hours) {
		err := read("the rollup's hours", db().Model(&models.ExecutionRollup{}).Where("hour >= ? AND hour < ?", hours, days))
		if err != nil {
			return nil, err
		}
	}
	err := read("the daily totals", db().Model(&models.ExecutionTotal{}).Where("grain = ? AND start >= ?", models.GrainDay, days))
	return rows, err
}

// ceil is the first multiple of d (from the zero time, in UTC: whole
// hours and midnights) at or after t.
func ceil(t time.Time, d time.Duration) time.Time {
	c := t.Truncate(d)
	if c.Before(t) {
		c = c.Add(d)
	}
	return c
}

// edgeOutcomes counts the executions created from q.Since to hours (the
// first whole hour) over idx_exec_window, and bins their durations: at
// most an hour of rows.
func (s *Service) edgeOutcomes(ctx context.Context, q Query, hours time.Time) ([]outcomeRow, error) {
	var execs []struct {
		ID, ActionTypeID, Status, ErrorCode string
		CreatedAt                           time.Time
		FinishedAt                          *time.Time
	}
	db := s.executions(ctx, q)
	if s.db.Dialector.Name() == "sqlite" {
		// With statistics SQLite skip-scans idx_exec_action_time; this
		// index searches the window.
		db = db.Table("executions INDEXED BY idx_exec_window")
	}
	err := db.Select("id, action_type_id, status, error_code, created_at, finished_at").
		Where("created_at >= ? AND created_at < ?", q.Since, hours).Scan(&execs).Error
	if err != nil {
		return nil, fmt.Errorf("count executions by outcome: %w", err)
	}
	rows := make([]outcomeRow, 0, len(execs))
	for _, e := range execs {
		row := outcomeRow{ActionTypeID: e.ActionTypeID, Status: e.Status, ErrorCode: e.ErrorCode, N: 1, Example: e.ID}
		if e.FinishedAt != nil {
			row.Histogram = models.HistogramOf(models.DurationBin(e.CreatedAt, *e.FinishedAt))
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// BinPercentile is the nearest-rank p-th percentile of the durations
// counted in h by bin: the value of the bin (models.BinValue) holding the
// smallest duration at least p% took no longer than; 0 for none. It is
// the percentile of the durations themselves up to the bin's width (a
// factor of about 1.22 either way).
func BinPercentile(h *[models.Bins]int64, p int) time.Duration {
	var total int64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := max((total*int64(p)+99)/100, 1)
	for i, n := range h {
		if rank -= n; rank <= 0 {
			return models.BinValue(i)
		}
	}
	return models.BinValue(models.Bins - 1)
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
