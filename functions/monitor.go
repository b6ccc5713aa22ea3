package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/functions/runtime"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// RunFilter selects runs of a package.
type RunFilter struct {
	Status, Version string
	Since           time.Time
	Offset, Limit   int
}

// Runs lists a package's runs, newest first, each redacted unless viewer
// may see it whole (redactRuns).
func (s *Service) Runs(ctx context.Context, viewer *models.User, reads *Reads, name string, f RunFilter) ([]models.FunctionRun, error) {
	p, err := s.pkg(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := s.rec.flush(ctx); err != nil {
		return nil, fmt.Errorf("write pending run records: %w", err)
	}
	q := s.db.WithContext(ctx).Where("package_id = ?", p.ID)
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Version != "" {
		q = q.Where("version = ?", f.Version)
	}
	if !f.Since.IsZero() {
		// Runs are stored in UTC and SQLite compares times as text: a
		// bound in another zone (since=...+02:00) compared wrong.
		q = q.Where("created_at >= ?", f.Since.UTC())
	}
	out := []models.FunctionRun{}
	if err := q.Order("created_at DESC, id").Offset(f.Offset).Limit(f.Limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", name, err)
	}
	ptrs := make([]*models.FunctionRun, len(out))
	for i := range out {
		ptrs[i] = &out[i]
	}
	redactRuns(ctx, viewer, reads, ptrs)
	return out, nil
}

// redactRuns blanks, in place, the console, error and target of every run
// viewer may not see whole: a run's console and error may quote the
// target and every object it read, so a caller other than its actor sees
// them only when it may read all of those now (the action log's rule,
// ontology.Store.ReadableRecords). A run recorded without its reads, or
// any failure to judge, redacts (fails closed).
func redactRuns(ctx context.Context, viewer *models.User, reads *Reads, runs []*models.FunctionRun) {
	if reads == nil || reads.store == nil {
		for _, r := range runs {
			if viewer == nil || r.ActorID != viewer.ID {
				redactRun(r)
			}
		}
		return
	}
	if reads.store.Levels().ReadScope(viewer).All {
		return
	}
	var judged []*models.FunctionRun
	var recs []ontology.NamedRecord
	for _, r := range runs {
		switch {
		case viewer != nil && r.ActorID == viewer.ID:
		case r.Reads.V == nil:
			redactRun(r)
		default:
			judged = append(judged, r)
			recs = append(recs, ontology.NamedRecord{ActorID: r.ActorID, Objects: runObjects(r)})
		}
	}
	ok, err := reads.store.ReadableRecords(ctx, viewer, recs)
	if err != nil {
		slog.ErrorContext(ctx, "judge function runs against the read rule; redacting them", "err", err)
	}
	for i, r := range judged {
		if err != nil || !ok[i] {
			redactRun(r)
		}
	}
}

// runObjects are the objects a run names: its target and what it read.
func runObjects(r *models.FunctionRun) []string {
	ids := slices.Clone(r.Reads.V)
	if r.TargetID != "" {
		ids = append(ids, r.TargetID)
	}
	return ids
}

// redactRun blanks what of r may quote objects; the outcome (status,
// reason, duration) and who ran what stay.
func redactRun(r *models.FunctionRun) {
	r.Console, r.Error, r.TargetID, r.Redacted = "", "", "", true
}

// VersionMetrics summarize the runs of one version.
type VersionMetrics struct {
	Version     string              `json:"version"`
	Runs        int                 `json:"runs"`
	Failures    int                 `json:"failures"`
	P50MS       int64               `json:"p50_ms"`
	P95MS       int64               `json:"p95_ms"`
	MaxMS       int64               `json:"max_ms"`
	LastFailure *models.FunctionRun `json:"last_failure,omitempty"`
}

// Metrics summarize a package's runs since a time, per version. The
// durations are read and ranked here, so both databases agree. The last
// failure is redacted as Runs redacts.
func (s *Service) Metrics(ctx context.Context, viewer *models.User, reads *Reads, name string, since time.Time) ([]VersionMetrics, error) {
	p, err := s.pkg(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := s.rec.flush(ctx); err != nil {
		return nil, fmt.Errorf("write pending run records: %w", err)
	}
	var rows []models.FunctionRun
	// UTC for SQLite's text comparison, as in Runs.
	err = s.db.WithContext(ctx).Select("version", "status", "duration_ms", "created_at", "id").
		Where("package_id = ? AND created_at >= ?", p.ID, since.UTC()).Order("created_at").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read runs of %s: %w", name, err)
	}
	by := map[string][]models.FunctionRun{}
	for _, r := range rows {
		by[r.Version] = append(by[r.Version], r)
	}
	out := []VersionMetrics{}
	for v, rs := range by {
		m, err := s.summarize(ctx, v, rs)
		if err != nil {
			return nil, err
		}
		if m.LastFailure != nil {
			redactRuns(ctx, viewer, reads, []*models.FunctionRun{m.LastFailure})
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b VersionMetrics) int { return compareVersions(b.Version, a.Version) })
	return out, nil
}

func (s *Service) summarize(ctx context.Context, v string, rs []models.FunctionRun) (VersionMetrics, error) {
	m := VersionMetrics{Version: v, Runs: len(rs)}
	ds := make([]int64, 0, len(rs))
	var last string
	for _, r := range rs {
		ds = append(ds, r.DurationMS)
		if r.Status == StatusFailed {
			m.Failures++
			last = r.ID
		}
	}
	slices.Sort(ds)
	m.P50MS, m.P95MS, m.MaxMS = percentile(ds, 50), percentile(ds, 95), ds[len(ds)-1]
	if last != "" {
		var r models.FunctionRun
		if err := s.db.WithContext(ctx).Take(&r, "id = ?", last).Error; err != nil {
			return m, fmt.Errorf("read the last failure: %w", err)
		}
		m.LastFailure = &r
	}
	return m, nil
}

// percentile is the nearest-rank p-th percentile of sorted ds: the
// smallest duration at least p% of the runs took no longer than. Ranking
// down instead ((n-1)*p/100) made p95 of two runs the faster one, hiding
// the slow tail p95 is read for.
func percentile(ds []int64, p int) int64 {
	rank := (len(ds)*p + 99) / 100 // ceil(n*p/100), at least 1 for n ≥ 1
	return ds[max(rank, 1)-1]
}

// TestInput is the body of a test run.
type TestInput struct {
	Parameters     map[string]any `json:"parameters"`
	TargetObjectID string         `json:"target_object_id"`
}

// TestResult is what a test run returned, nothing applied.
type TestResult struct {
	Status     string          `json:"status"`
	Value      json.RawMessage `json:"value,omitempty"`
	Console    string          `json:"console,omitempty"`
	DurationMS int64           `json:"duration_ms"`
	Error      *apperr.Error   `json:"error,omitempty"`
}

// Test runs a version against inputs as actor, network refused, without
// applying its edits; the run is recorded as a test.
func (s *Service) Test(ctx context.Context, actor *models.User, reads *Reads, name, v string, in TestInput) (*TestResult, error) {
	p, err := s.pkg(ctx, name)
	if err != nil {
		return nil, err
	}
	row, err := s.version(ctx, p, v)
	if err != nil {
		return nil, err
	}
	if s.testHost == nil {
		return nil, apperr.New(apperr.OperationNotSupported, "test runs are not available in this process")
	}
	h := s.testHost(actor, reads)
	input := runtime.Input{Parameters: in.Parameters, Actor: runtime.Actor{ID: actor.ID, Username: actor.Username, Roles: actor.Roles.V},
		Action: runtime.Action{Name: "test"}}
	if in.TargetObjectID != "" {
		t, err := h.Get(ctx, in.TargetObjectID)
		if err != nil || t == nil {
			return nil, apperr.New(apperr.ObjectNotFound, "object %q not found", in.TargetObjectID)
		}
		input.Target = t
	}
	lim := capabilities(p).Limits()
	lim.Network = false
	r := &resolved{pkg: p, version: row.Version, prog: runtime.Program{Code: row.Code}, limits: lim}
	start := time.Now()
	out, err := s.rt.Run(ctx, r.prog, input, h, lim)
	d := time.Since(start)
	s.record(r, RunRequest{ActorID: actor.ID, TargetID: in.TargetObjectID, Host: h}, RunTest, out, err, d)
	res := &TestResult{Status: StatusSucceeded, DurationMS: d.Milliseconds()}
	var f *runtime.Failure
	switch {
	case errors.As(err, &f):
		res.Status, res.Console = StatusFailed, f.Console
		res.Error = apperr.New(apperr.FunctionFailed, "the function failed (%s): %s", f.Reason, f.Message).
			WithDetails(apperr.Detail{Reason: f.Reason, Message: f.Message})
	case err != nil:
		return nil, err
	default:
		res.Value, res.Console = out.Value, out.Console
	}
	return res, nil
}
