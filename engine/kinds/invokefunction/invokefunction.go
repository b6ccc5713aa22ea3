// Package invokefunction is the invoke_function operation kind: a user
// function (docs/functions.md) run as the effect step, its edits applied
// with the execution; and the host that answers a function's reads
// (host.go, media.go), for actions and for the functions service's test
// runs alike.
package invokefunction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/functions"
	"github.com/ontoflow/ontoflow/functions/runtime"
	"github.com/ontoflow/ontoflow/models"
)

// InvokeFunction is the invoke_function kind: a user function (inline, or
// a version of a function package) runs as the effect step, before the
// transaction — a local activity, or a regular one with retries when it
// has the network capability — reading the ontology with the actor's read
// rule; the edits it returns are type-checked and applied by Apply in the
// execution's transaction, exactly once (edits.go). Functions
// never write.
//
// The zero value, as kinds.Builtin lists it, checks definitions only
// structurally and cannot run (app/app.go puts in one that can).
type InvokeFunction struct {
	// Functions resolves, compiles, runs and records functions.
	Functions Runner
	// Reads are the reads beyond one object (query, links), with the
	// actor's read rule.
	Reads Reads
	// Client is the outbound (SSRF-guarded) client fetch uses.
	Client *http.Client
}

// Runner is what invoke_function needs of function packages
// (functions.Service is one).
type Runner interface {
	// Check resolves ref and compiles its source, at definition time.
	Check(ctx context.Context, ref functions.Ref) error
	// Capabilities are ref's limits and grants (the package's, or the
	// inline config's), known before the run.
	Capabilities(ctx context.Context, ref functions.Ref) (runtime.Limits, error)
	// Run resolves ref (auto_upgrade: the highest compatible version, now),
	// runs it and records the run.
	Run(ctx context.Context, req functions.RunRequest) (*functions.RunResult, error)
}

// Reads reads beyond one object, with the actor's read rule;
// with tx (op.Tx) inside that transaction, so a what-if's function reads
// the branch it replayed, else through the store's own connections.
type Reads interface {
	Query(ctx context.Context, tx models.Tx, actor *models.User, objectType string, filters map[string]any, limit int) ([]engine.Object, error)
	Links(ctx context.Context, tx models.Tx, actor *models.User, objectTypeID, objectID, linkType string) ([]domain.Link, error)
	Aggregate(ctx context.Context, tx models.Tx, actor *models.User, objectType string, request json.RawMessage) (any, error)
}

// functionConfig is invoke_function's operation config. package_name is
// the name domain.FunctionRef used before; package is the documented one.
type functionConfig struct {
	domain.FunctionRef
	Package      string                  `json:"package,omitempty"`
	Capabilities *functions.Capabilities `json:"capabilities,omitempty"`
}

// ref is c as the runner takes it.
func (c *functionConfig) ref() functions.Ref {
	name := c.Package
	if name == "" {
		name = c.PackageName
	}
	return functions.Ref{Inline: c.Inline, Package: name, Version: c.Version, AutoUpgrade: c.AutoUpgrade, Capabilities: c.Capabilities}
}

// Name implements domain.OperationKind.
func (InvokeFunction) Name() string { return domain.KindInvokeFunction }

// NeedsObjectType implements domain.OperationKind: optional.
func (InvokeFunction) NeedsObjectType() bool { return false }

// HasTarget implements domain.OperationKind: when it names an object type.
func (InvokeFunction) HasTarget(objectTypeID string) bool { return objectTypeID != "" }

// NewConfig implements domain.OperationKind.
func (InvokeFunction) NewConfig() any { return &functionConfig{} }

// CheckConfig implements domain.OperationKind: the reference's shape, then
// (with a runner) that the package and version exist and the source
// compiles.
func (k InvokeFunction) CheckConfig(ctx context.Context, s *domain.KindScope, cfg any) error {
	c := cfg.(*functionConfig)
	r := c.FunctionRef
	if c.Package != "" {
		if r.PackageName != "" {
			return s.Err(".package", "not_allowed", "name the package once: package (package_name is its older name)")
		}
		r.PackageName = c.Package
	}
	if err := domain.CheckFunctionRef(s.Field, r); err != nil {
		return err
	}
	if r.PackageID != "" {
		return s.Err(".package_id", "not_allowed", "name the package by name: package + version")
	}
	if c.Capabilities != nil && c.Inline == nil {
		return s.Err(".capabilities", "not_allowed", "a package's capabilities are the package's; capabilities are for inline functions")
	}
	if err := c.Capabilities.Check(); err != nil {
		return s.Err(".capabilities", "range", "%v", err)
	}
	if k.Functions == nil {
		return nil
	}
	// The request's context, bounded still: resolving is one or two rows
	// and compiling an inline source a few milliseconds, so a check that
	// takes longer is stuck, not slow.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := k.Functions.Check(ctx, c.ref()); err != nil {
		return s.Err(".function", "function", "%v", err)
	}
	return nil
}

// References implements domain.OperationKind: a function's edits are not
// known at definition time.
func (InvokeFunction) References(any) domain.References { return domain.References{} }

// Preview implements Kind: the edits are known only after the run.
func (InvokeFunction) Preview(context.Context, *engine.Op) ([]models.Edit, error) { return nil, nil }

// EffectOptions implements EffectKind: without network the function stays
// in the process, a local activity tried once (a function's failure is
// its own, not the infrastructure's); with network, a regular activity
// retried as a call out is.
func (k InvokeFunction) EffectOptions(op *engine.Op) engine.EffectOptions {
	lim := k.limits(op)
	o := engine.EffectOptions{StartToClose: lim.Timeout + 5*time.Second, MaxAttempts: 1, Local: !lim.Network}
	if lim.Network {
		o.MaxAttempts, o.InitialInterval, o.MaxInterval = 3, time.Second, 10*time.Second
	}
	return o
}

// limits are op's function's limits (defaults when they cannot be read:
// the run reads them again and fails there).
func (k InvokeFunction) limits(op *engine.Op) runtime.Limits {
	c := op.Config.(*functionConfig)
	if k.Functions == nil {
		return c.Capabilities.Limits()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lim, err := k.Functions.Capabilities(ctx, c.ref())
	if err != nil {
		return c.Capabilities.Limits()
	}
	return lim
}

// FunctionCall is the record of a function's effect step: which version
// ran, what it returned, and what it read (for the stale-read check).
// It is in the workflow's history; results are at most 1 MiB and console
// output 64 KiB.
type FunctionCall struct {
	Package    string          `json:"package,omitempty"`
	Version    string          `json:"version,omitempty"`
	Edits      []FunctionEdit  `json:"edits"`
	Result     json.RawMessage `json:"result,omitempty"`
	Console    string          `json:"console,omitempty"`
	DurationMS int64           `json:"duration_ms"`
	// Reads maps each object the function read to the update time it saw
	// ("" when it did not exist or was unreadable).
	Reads map[string]string `json:"reads,omitempty"`
	// Scanned: the function used query or links (no re-run inside the
	// transaction then; see functionHost.scanned).
	Scanned bool `json:"scanned,omitempty"`
	// Media maps each file ctx.media read to the SHA-256 it read.
	Media   map[string]string `json:"media,omitempty"`
	Preview bool              `json:"preview,omitempty"`
	// The limits it ran with, for a re-run with the same ones.
	Network   bool  `json:"network,omitempty"`
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	MemoryMiB int64 `json:"memory_mib,omitempty"`
}

// Effect implements EffectKind: one run of the function.
func (k InvokeFunction) Effect(ctx context.Context, op *engine.Op, _ string) (json.RawMessage, error) {
	call, err := k.run(ctx, op, op.Config.(*functionConfig).ref(), k.limits(op), false)
	if err != nil {
		return nil, err
	}
	return json.Marshal(call)
}

// previewTimeoutMax caps a previewed function's wall time: a what-if runs
// it inside the transaction that replayed the branch, which on SQLite
// holds the database's write lock for as long as it runs.
const previewTimeoutMax = 5 * time.Second

// PreviewEffect implements EffectPreviewer: the function runs with
// network refused and at most previewTimeoutMax; the run is recorded as a
// preview.
func (k InvokeFunction) PreviewEffect(ctx context.Context, op *engine.Op) (json.RawMessage, error) {
	lim := k.limits(op)
	lim.Network = false
	lim.Timeout = min(lim.Timeout, previewTimeoutMax)
	call, err := k.run(ctx, op, op.Config.(*functionConfig).ref(), lim, true)
	if err != nil {
		return nil, err
	}
	call.Preview = true
	return json.Marshal(call)
}

// run runs op's function with reads outside any transaction (op.Tx nil)
// or inside it (a re-run after a stale read).
func (k InvokeFunction) run(ctx context.Context, op *engine.Op, ref functions.Ref, lim runtime.Limits, preview bool) (*FunctionCall, error) {
	if k.Functions == nil {
		return nil, engine.NotSupported(domain.KindInvokeFunction)
	}
	h := &functionHost{op: op, reads: k.Reads, client: k.Client, seen: map[string]string{}}
	roles := op.Actor.Roles.V
	if roles == nil {
		roles = []string{}
	}
	in := runtime.Input{Parameters: op.Params, Actor: runtime.Actor{ID: op.Actor.ID, Username: op.Actor.Username, Roles: roles},
		Action: runtime.Action{Name: op.Action.Name, Version: op.Action.Version}, ExecutionID: op.ExecutionID}
	req := functions.RunRequest{Ref: ref, Limits: lim, Host: h, Preview: preview,
		ActionTypeID: op.Action.ID, ActionName: op.Action.Name, ExecutionID: op.ExecutionID, ActorID: op.Actor.ID}
	if op.Target != nil {
		req.TargetID = op.Target.ID
	}
	req.CheckResult = func(out *runtime.Output) error {
		_, _, err := parseReturn(out.Value, req.TargetID)
		return withConsole(err, out.Console)
	}
	if op.Target != nil {
		in.Target = objectView(op.Target)
		_ = h.saw(op.Target.ID, op.Target) // the first read: never over the bound
	}
	req.Input = in
	res, err := k.Functions.Run(ctx, req)
	if stale := h.mediaConflict(); stale != nil {
		// Whatever the function made of it (it may have caught the throw).
		return nil, stale
	}
	if err != nil {
		return nil, functionFailure(err)
	}
	call := &FunctionCall{Package: res.Package, Version: res.Version, Console: res.Output.Console,
		DurationMS: res.Output.Duration.Milliseconds(), Reads: h.seen, Scanned: h.scanned, Media: h.media,
		Network: lim.Network, TimeoutMS: lim.Timeout.Milliseconds(), MemoryMiB: lim.Memory >> 20}
	if call.Edits, call.Result, err = parseReturn(res.Output.Value, req.TargetID); err != nil {
		// A runner that did not check (a test double) still refuses it.
		return nil, withConsole(err, res.Output.Console)
	}
	return call, nil
}

// functionFailure types a run's failure: the function's own (a throw, a
// limit) is FunctionFailed with its reason and console output; anything
// typed passes through.
func functionFailure(err error) error {
	var f *runtime.Failure
	if !asFailure(err, &f) {
		return err
	}
	data := map[string]any{"console": f.Console}
	var re *functions.RunError
	if errors.As(err, &re) && re.Package != "" {
		data["package"], data["version"] = re.Package, re.Version
	}
	if f.Line > 0 {
		data["line"], data["column"] = f.Line, f.Column
	}
	return apperr.New(apperr.FunctionFailed, "the function failed (%s): %s", f.Reason, f.Message).
		WithDetails(apperr.Detail{Field: "function", Reason: f.Reason, Message: f.Message}).
		WithData(data)
}

// Apply implements Kind: refuses edits computed from data that changed
// since the function read it (after one re-run inside the transaction, for
// a function without network), then applies the edits, each type-checked
// as any write is.
func (k InvokeFunction) Apply(ctx context.Context, op *engine.Op) (*engine.Outcome, error) {
	var call FunctionCall
	if err := json.Unmarshal(op.Effect, &call); err != nil {
		return nil, fmt.Errorf("decode the function call's record: %w", err)
	}
	if err := k.fresh(ctx, op, &call); err != nil {
		return nil, err
	}
	edits, err := applyFunctionEdits(ctx, op, call.Edits)
	if err != nil {
		return nil, err
	}
	// reads: what the console and result may quote; the action log shows
	// them only to a reader of every one (ontology.RedactExecutions).
	rec := map[string]any{"package": call.Package, "version": call.Version, "duration_ms": call.DurationMS, "edits": len(edits),
		"reads": readIDs(call.Reads)}
	if call.Console != "" {
		rec["console"] = call.Console
	}
	if len(call.Media) > 0 {
		rec["media_reads"] = call.Media
	}
	if call.Preview {
		rec["preview"] = true
	}
	out := &engine.Outcome{Edits: edits, Result: map[string]any{"function": rec}}
	if len(call.Result) > 0 && string(call.Result) != "null" {
		out.Result["result"] = call.Result
	}
	return out, nil
}

// readIDs are the objects whose data reached the function (a non-empty
// stamp), sorted.
func readIDs(reads map[string]string) []string {
	h := functionHost{seen: reads}
	return h.ObjectsRead()
}

// fresh checks that what the function read is unchanged; when it is not
// and the function stays in the process, it runs the function again with
// its reads inside the transaction (bounded: once), else 409.
func (k InvokeFunction) fresh(ctx context.Context, op *engine.Op, call *FunctionCall) error {
	stale, err := staleRead(ctx, op, call.Reads)
	if err != nil || stale == "" {
		return err
	}
	if !call.Network && !call.Preview && !call.Scanned && k.Functions != nil {
		// The same version with the same limits, read inside the
		// transaction (nothing it reads can change under it on SQLite;
		// checked again below for Postgres).
		ref := op.Config.(*functionConfig).ref()
		if call.Package != "" {
			ref.Version, ref.AutoUpgrade = call.Version, false
		}
		lim := runtime.Limits{Timeout: time.Duration(call.TimeoutMS) * time.Millisecond, Memory: call.MemoryMiB << 20}.Normalized()
		again, err := k.run(ctx, op, ref, lim, false)
		if err != nil {
			return err
		}
		if stale, err = staleRead(ctx, op, again.Reads); err != nil {
			return err
		}
		if stale == "" {
			*call = *again
			return nil
		}
	}
	return apperr.New(apperr.Conflict, "object %s changed after the function read it; its edits were not applied", stale).
		WithDetails(apperr.Detail{Field: stale, Reason: "stale_read", Message: "changed since the function read it"})
}

// staleRead returns the first object of reads that changed since. Each is
// locked first (Postgres; SQLite has one writer): a write landing between
// this check and the commit would otherwise go unseen, and edits computed
// from what it replaced would commit.
func staleRead(ctx context.Context, op *engine.Op, reads map[string]string) (string, error) {
	for id, saw := range reads {
		// The run step has just read (and locked) the target in the
		// transaction.
		o := op.Target
		if o == nil || o.ID != id {
			if err := lockRead(ctx, op, id); err != nil {
				return "", err
			}
			var err error
			if o, err = op.Ontology.In(op.Tx).Object(ctx, id); err != nil {
				return "", fmt.Errorf("check what the function read (%s): %w", id, err)
			}
		}
		if updatedStamp(o, op) != saw {
			return id, nil
		}
	}
	return "", nil
}

// lockRead locks object id in op's transaction; a preview outside one
// commits nothing and locks nothing.
func lockRead(ctx context.Context, op *engine.Op, id string) error {
	if op.Tx.None() {
		return nil
	}
	if err := op.Ontology.In(op.Tx).LockObject(ctx, id); err != nil {
		return fmt.Errorf("lock what the function read (%s): %w", id, err)
	}
	return nil
}

// Invert implements Kind: each edit a function returned is inverted as
// the kind that makes such edits inverts it.
func (InvokeFunction) Invert(ed models.Edit) ([]models.Edit, error) {
	inv, err := ed.Inverse()
	if err != nil {
		return nil, fmt.Errorf("invoke_function: %w", err)
	}
	return inv, nil
}
