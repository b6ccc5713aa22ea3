// Package functions holds function packages: creating them, publishing
// immutable semver versions (compiled and syntax-checked at publish),
// resolving an action's reference (exact or compatible auto-upgrade),
// running a function on the runtime and recording every run for
// monitoring. The invoke_function operation kind
// (engine/kinds/invokefunction) calls it through its Runner with the
// types of run.go; the API's /functions routes through the
// methods below.
package functions

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/functions/runtime"
	"github.com/ontoflow/ontoflow/models"
)

// Permissions of the /functions routes.
const (
	PermRead  = "functions:read"
	PermWrite = "functions:write"
)

// Run kinds recorded on a run.
const (
	RunAction = "action"
	RunWhatIf = "what-if"
	RunTest   = "test"
)

// Statuses of a recorded run.
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// Service is the function packages' lifecycle and the runner.
type Service struct {
	db *gorm.DB
	rt runtime.Runtime
	// testHost makes a test run's host (Options.TestHost).
	testHost func(actor *models.User, reads *Reads) runtime.Host
	log      *slog.Logger
	metrics  *metrics
	now      func() time.Time

	rec *recorder

	mu     sync.Mutex
	inline map[[32]byte]runtime.Program
}

// Options configure a Service.
type Options struct {
	Log        *slog.Logger
	Registerer prometheus.Registerer
	// Runtime runs programs (nil: QuickJS in worker processes, which a
	// time limit can stop whatever the function does).
	Runtime runtime.Runtime
	// TestHost is the host a test run reads through: the one an action's
	// run reads through (invokefunction.TestHost), so a test run sees what
	// a real one would (nil: test runs are refused).
	TestHost func(actor *models.User, reads *Reads) runtime.Host
}

// New returns a Service over db.
func New(db *gorm.DB, o Options) *Service {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.Runtime == nil {
		o.Runtime = runtime.Workers{}
	}
	return &Service{db: db, rt: o.Runtime, testHost: o.TestHost, log: o.Log, metrics: newMetrics(o.Registerer), rec: newRecorder(db, o.Log),
		now: func() time.Time { return time.Now().UTC() }, inline: map[[32]byte]runtime.Program{}}
}

// resolved is a reference resolved to what runs.
type resolved struct {
	pkg     *models.FunctionPackage
	version string
	prog    runtime.Program
	limits  runtime.Limits
}

// Check implements invokefunction.Runner: the reference resolves and its
// source compiles.
func (s *Service) Check(ctx context.Context, ref Ref) error {
	if ref.AutoUpgrade {
		if err := checkAutoUpgradeFloor(ref.Version); err != nil {
			return err
		}
	}
	_, err := s.resolve(ctx, ref)
	return err
}

// Capabilities implements invokefunction.Runner.
func (s *Service) Capabilities(ctx context.Context, ref Ref) (runtime.Limits, error) {
	if ref.Inline != nil {
		return ref.Capabilities.Limits(), nil
	}
	p, err := s.pkg(ctx, ref.Package)
	if err != nil {
		return runtime.Limits{}, err
	}
	return capabilities(p).Limits(), nil
}

// resolve finds what ref runs: the inline source compiled (cached by its
// hash), or the package's version — the highest compatible one, now,
// with auto_upgrade.
func (s *Service) resolve(ctx context.Context, ref Ref) (*resolved, error) {
	if ref.Inline != nil {
		prog, err := s.compileInline(ref.Inline)
		if err != nil {
			return nil, err
		}
		return &resolved{prog: prog, limits: ref.Capabilities.Limits()}, nil
	}
	p, err := s.pkg(ctx, ref.Package)
	if err != nil {
		return nil, err
	}
	v := ref.Version
	if ref.AutoUpgrade {
		if v, err = s.upgrade(ctx, p, ref.Version); err != nil {
			return nil, err
		}
	}
	row, err := s.version(ctx, p, v)
	if err != nil {
		return nil, err
	}
	return &resolved{pkg: p, version: row.Version, prog: runtime.Program{Code: row.Code}, limits: capabilities(p).Limits()}, nil
}

// compileInline compiles an inline function once per distinct source: at
// 2.5-4.6 ms per KB, compiling on every run would cost more than the run.
func (s *Service) compileInline(f *domain.InlineFunction) (runtime.Program, error) {
	key := sha256.Sum256([]byte(f.Runtime + "\x00" + f.Source))
	s.mu.Lock()
	prog, ok := s.inline[key]
	s.mu.Unlock()
	if ok {
		return prog, nil
	}
	prog, err := runtime.Compile(f.Runtime, f.Source)
	if err != nil {
		return prog, compileError("inline.source", err)
	}
	s.mu.Lock()
	if len(s.inline) >= 512 {
		clear(s.inline)
	}
	s.inline[key] = prog
	s.mu.Unlock()
	return prog, nil
}

// compileError is a compile failure as a 400 naming line and column.
func compileError(field string, err error) error {
	var f *runtime.Failure
	if !errors.As(err, &f) {
		return err
	}
	e := apperr.New(apperr.InvalidArgument, "%s does not compile: %v", field, f)
	d := apperr.Detail{Field: field, Reason: f.Reason, Message: f.Message}
	return e.WithDetails(d).WithData(map[string]any{"line": f.Line, "column": f.Column})
}

// Run implements invokefunction.Runner: resolve, run, record.
func (s *Service) Run(ctx context.Context, req RunRequest) (*RunResult, error) {
	r, err := s.resolve(ctx, req.Ref)
	if err != nil {
		return nil, err
	}
	lim := req.Limits
	if lim.Timeout == 0 {
		lim = r.limits
	}
	start := time.Now()
	out, err := s.rt.Run(ctx, r.prog, req.Input, req.Host, lim)
	var refused error
	if err == nil && req.CheckResult != nil {
		// A return value the engine refuses fails the run, recorded so.
		refused = req.CheckResult(out)
	}
	kind := RunAction
	if req.Preview {
		kind = RunWhatIf
	}
	s.record(r, req, kind, out, errors.Join(err, refused), time.Since(start))
	name := ""
	if r.pkg != nil {
		name = r.pkg.Name
	}
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, &RunError{Package: name, Version: r.version, Err: err}
	}
	return &RunResult{Package: name, Version: r.version, Output: out}, nil
}

// Flush writes the run records still pending (at shutdown).
func (s *Service) Flush(ctx context.Context) error { return s.rec.flush(ctx) }

// record stores one run of a package's version (in the background, see
// recorder) and counts it; inline functions are counted only (they have
// no package to monitor).
func (s *Service) record(r *resolved, req RunRequest, kind string, out *runtime.Output, err error, d time.Duration) {
	name, status := "inline", StatusSucceeded
	if r.pkg != nil {
		name = r.pkg.Name
	}
	run := models.FunctionRun{ID: uuid.NewString(), Version: r.version, ActionTypeID: req.ActionTypeID, ActionName: req.ActionName,
		ExecutionID: req.ExecutionID, ActorID: req.ActorID, TargetID: req.TargetID, Kind: kind, DurationMS: d.Milliseconds(), CreatedAt: s.now()}
	if out != nil {
		run.Console = strings.ToValidUTF8(out.Console, "")
	}
	// What it read decides who may see its console and error (redactRuns).
	run.Reads = models.NewJSON([]string{})
	if h, ok := req.Host.(ObjectsRead); ok {
		run.Reads.V = h.ObjectsRead()
	}
	if err != nil {
		status = StatusFailed
		run.Error = clip(err.Error(), 4000)
		var f *runtime.Failure
		if errors.As(err, &f) {
			run.Reason, run.Console = f.Reason, strings.ToValidUTF8(f.Console, "")
		} else if apperr.CodeOf(err) == apperr.FunctionResultInvalid {
			run.Reason = ResultInvalidReason
		}
	}
	run.Status = status
	s.metrics.observe(name, r.version, status, d)
	if r.pkg == nil {
		return
	}
	run.PackageID = r.pkg.ID
	s.rec.add(run)
}

// clip cuts s to at most n bytes on a character boundary (Postgres
// refuses invalid UTF-8 in text columns).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// capabilities are a package's stored capabilities.
func capabilities(p *models.FunctionPackage) *Capabilities {
	c := &Capabilities{}
	if v, ok := p.Capabilities.V["network"].(bool); ok {
		c.Network = v
	}
	if v, ok := p.Capabilities.V["timeout"].(string); ok {
		c.Timeout = v
	}
	switch v := p.Capabilities.V["memory_mib"].(type) {
	case float64:
		c.MemoryMiB = int(v)
	case int:
		c.MemoryMiB = v
	}
	return c
}

// pkg loads a package by name.
func (s *Service) pkg(ctx context.Context, name string) (*models.FunctionPackage, error) {
	var p models.FunctionPackage
	err := s.db.WithContext(ctx).Take(&p, "name = ?", name).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.New(apperr.FunctionNotFound, "function package %q not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("load function package %s: %w", name, err)
	}
	return &p, nil
}

// version loads one version of p.
func (s *Service) version(ctx context.Context, p *models.FunctionPackage, v string) (*models.FunctionVersion, error) {
	var row models.FunctionVersion
	err := s.db.WithContext(ctx).Take(&row, "package_id = ? AND version = ?", p.ID, v).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.New(apperr.FunctionNotFound, "function package %s has no version %q", p.Name, v)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s@%s: %w", p.Name, v, err)
	}
	return &row, nil
}
