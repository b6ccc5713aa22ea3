// Package executions holds the lifecycle of action executions: submitting
// one or a batch (the execution rows, idempotency, starting the workflow),
// resuming by idempotency key, waiting, reading and listing. Every caller
// goes through it — the API's routes, and next the console, what-if and
// revert — so the rules below hold on every path:
//
//   - the request is recorded as execution rows before its workflow starts,
//     and the workflow's input is only ids;
//   - an Idempotency-Key is unique per actor: the same key and request
//     return the same execution (single or batch) and never run it twice;
//     the same key with another request is IdempotencyConflict;
//   - a workflow that cannot be started leaves no row queued: without a key
//     the rows are recorded failed (Unavailable); with one they wait for a
//     retry with that key, which starts the workflow at most once, and
//     when none comes within AbandonAfter the sweep records them failed.
package executions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/internal/printable"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/workflows"
)

// Options configure a Service; app fills them from config, the one source
// of their defaults.
type Options struct {
	// BatchMaxItems refuses larger batches (BatchTooLarge).
	BatchMaxItems int
	// BatchSyncMax is the largest batch a caller may wait for; larger
	// ones always answer at once.
	BatchSyncMax int
	// ExecuteTimeout bounds a wait.
	ExecuteTimeout time.Duration
	// LocalWorker says the engine's worker runs in this process (dev): a
	// wait then listens for the engine to settle the execution instead of
	// long-polling Temporal for the workflow's close.
	LocalWorker bool
	// UIURL and Namespace build workflow links ("" = none).
	UIURL, Namespace string
	// BranchTTL is how long a what-if branch lives (0: DefaultBranchTTL).
	BranchTTL time.Duration
	// AbandonAfter is how long a keyed execution whose workflow never
	// started waits for its retry (0: DefaultAbandonAfter).
	AbandonAfter time.Duration
}

// PermAuditExecutions lets a user read every execution in the action log;
// others read their own (the API's and the console's rule, one constant).
const PermAuditExecutions = "executions:read"

// Service runs the execution lifecycle.
type Service struct {
	db      *gorm.DB
	execs   *execstore.Store
	store   *ontology.Store
	eng     *engine.Engine
	starter *workflows.Starter
	opts    Options
}

// New returns a Service.
func New(db *gorm.DB, store *ontology.Store, eng *engine.Engine, starter *workflows.Starter, opts Options) *Service {
	if opts.BranchTTL <= 0 {
		opts.BranchTTL = DefaultBranchTTL
	}
	if opts.AbandonAfter <= 0 {
		opts.AbandonAfter = DefaultAbandonAfter
	}
	return &Service{db: db, execs: execstore.New(db), store: store, eng: eng, starter: starter, opts: opts}
}

// localGrace is how long a wait listens for the local worker before it
// also asks Temporal. The workflow task of an execution started here is
// handed to this process's worker (eager start), so the local answer comes
// unless that worker lost the task, e.g. to a retry elsewhere.
const localGrace = 5 * time.Second

// Request is one execution request.
type Request struct {
	Action        *engine.ActionType
	Actor         *models.User
	Guest         bool
	Kind          string // models.KindExecute, KindInlineEdit
	TargetID      string
	Parameters    map[string]any
	Justification string
	// IdempotencyKey ("" = none) and Identity, what the key stands for
	// ("" = the action, kind, target, parameters and justification).
	IdempotencyKey, Identity string
	// BranchID is the branch a what-if runs on (WhatIf sets it).
	BranchID string
	// AutomationID is the automation starting the execution ("" = a
	// person) and AutomationDepth its lineage (how many firings led to it).
	AutomationID    string
	AutomationDepth int
}

// Handle is a submitted execution: its row as submitted and how to wait
// for it.
type Handle struct {
	Execution *models.Execution
	wait      func(ctx context.Context)
	release   func()
}

// Validate is the side-effect-free validation of a request: the same
// materialization and authorization as an execution.
func (s *Service) Validate(ctx context.Context, r Request) (*engine.Validation, error) {
	return s.eng.Check(ctx, engine.Request{Action: r.Action, Actor: r.Actor, Guest: r.Guest,
		TargetID: r.TargetID, Parameters: r.Parameters, Justification: r.Justification})
}

// Form resolves r's form (the validate check, answered as the form
// model every client draws).
func (s *Service) Form(ctx context.Context, r Request) (*engine.Form, error) {
	return s.eng.Form(ctx, engine.Request{Action: r.Action, Actor: r.Actor, Guest: r.Guest,
		TargetID: r.TargetID, Parameters: r.Parameters, Justification: r.Justification})
}

// Submit records an execution and starts its workflow, or, for a repeated
// Idempotency-Key, finds the execution the key recorded (starting its
// workflow if it never started). listen asks for a Handle whose Wait can
// use the local worker's settlement (a caller that will wait).
func (s *Service) Submit(ctx context.Context, r Request, listen bool) (*Handle, error) {
	if r.TargetID != "" && !domain.IsUUID(r.TargetID) {
		// Object ids are UUIDs; anything else names no object (and would
		// not fit the action log's column).
		return nil, apperr.New(apperr.ObjectNotFound, "object %q not found", r.TargetID)
	}
	ex := newExecution(r.Action, r.Actor, r.Guest, r.Kind, r.TargetID, r.Parameters, r.Justification)
	if r.BranchID != "" {
		ex.BranchID = &r.BranchID
	}
	if r.AutomationID != "" {
		ex.AutomationID, ex.AutomationDepth = &r.AutomationID, r.AutomationDepth
	}
	if r.IdempotencyKey != "" {
		if r.Identity == "" {
			r.Identity = Identity(r.Action.ID, r.Kind, requestShape{r.TargetID, r.Parameters, r.Justification})
		}
		prev, err := s.setKeyOrResume(ctx, ex, r.IdempotencyKey, r.Identity)
		if prev != nil || err != nil {
			return prev, err
		}
	}
	if err := s.execs.Create(ctx, ex); err != nil {
		if prev, rerr, ok := s.resumeAfterDuplicate(ctx, ex, err); ok {
			return prev, rerr
		}
		return nil, err
	}
	return s.start(ctx, ex, listen)
}

// start starts ex's workflow (workflows.Starter.Start picks it by the
// row's kind) and returns a Handle; a workflow that cannot start is
// answered by notStarted. listen: a wait may use the local worker's
// settlement.
func (s *Service) start(ctx context.Context, ex *models.Execution, listen bool) (*Handle, error) {
	h := &Handle{Execution: ex}
	var settled <-chan struct{}
	if listen && s.opts.LocalWorker {
		settled, h.release = s.eng.Settled(ex.ID)
	}
	run, err := s.starter.Start(ctx, ex)
	if err != nil {
		h.Release()
		return nil, s.notStarted(ctx, err, ex.IdempotencyKey != nil, ex.ID)
	}
	ex.RunID = run.GetRunID()
	h.wait = func(ctx context.Context) {
		if settled != nil {
			select {
			case <-settled:
				return
			case <-ctx.Done():
				return
			case <-time.After(localGrace):
			}
		}
		_ = run.Get(ctx, nil)
	}
	return h, nil
}

// BatchItem is one item of a batch request.
type BatchItem struct {
	TargetID   string
	Parameters map[string]any
}

// BatchRequest is an execute-batch request: shared parameters (items'
// own win) and justification.
type BatchRequest struct {
	Action         *engine.ActionType
	Actor          *models.User
	Guest          bool
	Items          []BatchItem
	Parameters     map[string]any
	Justification  string
	IdempotencyKey string
}

// SubmitBatch records a batch and its items and starts the batch
// workflow, with the same idempotency and start-failure rules as Submit.
func (s *Service) SubmitBatch(ctx context.Context, r BatchRequest) (*Handle, error) {
	n := len(r.Items)
	switch {
	case n == 0:
		return nil, apperr.New(apperr.InvalidArgument, "items must hold at least one item")
	case n > s.opts.BatchMaxItems:
		return nil, apperr.New(apperr.BatchTooLarge, "a batch holds at most %d items, got %d", s.opts.BatchMaxItems, n)
	}
	batch := newExecution(r.Action, r.Actor, r.Guest, models.KindBatch, "", r.Parameters, r.Justification)
	batch.TotalItems = n
	items := make([]models.Execution, n)
	for i, it := range r.Items {
		if it.TargetID != "" && !domain.IsUUID(it.TargetID) {
			return nil, apperr.New(apperr.InvalidArgument, "items[%d].target_object_id %q is not an object id", i, it.TargetID).
				WithDetails(apperr.Detail{Field: fmt.Sprintf("items[%d].target_object_id", i), Reason: "invalid", Message: "not an object id (a UUID)"})
		}
		params := make(map[string]any, len(r.Parameters)+len(it.Parameters))
		for k, v := range r.Parameters {
			params[k] = v
		}
		for k, v := range it.Parameters {
			params[k] = v
		}
		ex := newExecution(r.Action, r.Actor, r.Guest, models.KindBatchItem, it.TargetID, params, r.Justification)
		ex.WorkflowID, ex.BatchID, ex.BatchIndex = batch.WorkflowID, &batch.ID, i
		items[i] = *ex
	}
	if r.IdempotencyKey != "" {
		prev, err := s.setKeyOrResume(ctx, batch, r.IdempotencyKey, Identity(r.Action.ID, models.KindBatch, r.Items, r.Parameters, r.Justification))
		if prev != nil || err != nil {
			return prev, err
		}
	}
	if err := s.execs.CreateBatch(ctx, batch, items); err != nil {
		if prev, rerr, ok := s.resumeAfterDuplicate(ctx, batch, err); ok {
			return prev, rerr
		}
		return nil, err
	}
	run, err := s.starter.StartBatch(ctx, batch)
	if err != nil {
		return nil, s.notStarted(ctx, err, batch.IdempotencyKey != nil, batch.ID)
	}
	return &Handle{Execution: batch, wait: func(ctx context.Context) { _ = run.Get(ctx, nil) }}, nil
}

// setKeyOrResume sets the idempotency key on ex and returns the execution the key
// already recorded, if any.
func (s *Service) setKeyOrResume(ctx context.Context, ex *models.Execution, key, identity string) (*Handle, error) {
	if len(key) > 255 || !printable.String(key) {
		return nil, apperr.New(apperr.InvalidArgument, "Idempotency-Key must be at most 255 characters of UTF-8 text")
	}
	ex.IdempotencyKey, ex.RequestHash = &key, identity
	var prev models.Execution
	err := s.db.WithContext(ctx).Where("actor_id = ? AND idempotency_key = ?", ex.ActorID, key).Take(&prev).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up Idempotency-Key: %w", err)
	}
	return s.resume(ctx, &prev, identity)
}

// resumeAfterDuplicate answers an insert that lost to a concurrent request with the same
// key (ok false: err was something else, and stands).
func (s *Service) resumeAfterDuplicate(ctx context.Context, ex *models.Execution, err error) (_ *Handle, _ error, ok bool) {
	if !errors.Is(err, gorm.ErrDuplicatedKey) || ex.IdempotencyKey == nil {
		return nil, nil, false
	}
	var prev models.Execution
	if s.db.WithContext(ctx).Where("actor_id = ? AND idempotency_key = ?", ex.ActorID, *ex.IdempotencyKey).Take(&prev).Error != nil {
		return nil, nil, false
	}
	h, rerr := s.resume(ctx, &prev, ex.RequestHash)
	return h, rerr, true
}

// resume answers a repeated Idempotency-Key: the recorded execution, its
// workflow started now if the first request never started it.
func (s *Service) resume(ctx context.Context, prev *models.Execution, identity string) (*Handle, error) {
	if prev.RequestHash != identity {
		return nil, apperr.New(apperr.IdempotencyConflict, "Idempotency-Key was used with a different request (execution %s)", prev.ID)
	}
	if prev.FinishedAt != nil {
		return &Handle{Execution: prev, wait: func(context.Context) {}}, nil
	}
	run, err := s.starter.Resume(ctx, prev)
	if err != nil {
		slog.ErrorContext(ctx, "resume workflow", "execution", prev.ID, "err", err)
		return nil, apperr.New(apperr.Unavailable, "the execution's workflow could not be started; retry with the same Idempotency-Key")
	}
	return &Handle{Execution: prev, wait: func(ctx context.Context) { _ = run.Get(ctx, nil) }}, nil
}

// notStarted records what a failed workflow start leaves: without an
// Idempotency-Key nobody can resume the execution, so its rows (a batch's
// items too) are recorded failed; if the start did reach the server after
// all, the workflow finds them failed and applies nothing. With a key they
// stay for the retry.
func (s *Service) notStarted(ctx context.Context, err error, keyed bool, id string) error {
	slog.ErrorContext(ctx, "start workflow", "execution", id, "err", err)
	if !keyed {
		if ferr := s.eng.FailUnstarted(context.WithoutCancel(ctx), id, engine.Failure{Code: string(apperr.Unavailable),
			Message: "the execution's workflow could not be started"}); ferr != nil {
			slog.ErrorContext(ctx, "record unstarted execution", "execution", id, "err", ferr)
		}
		return apperr.New(apperr.Unavailable, "the execution's workflow could not be started; retry")
	}
	return apperr.New(apperr.Unavailable, "the execution's workflow could not be started; retry with the same Idempotency-Key, which resumes the same execution")
}

// Release stops listening for the local worker; call it when done with h.
func (h *Handle) Release() {
	if h != nil && h.release != nil {
		h.release()
		h.release = nil
	}
}

// Wait waits for h's execution to finish, at most the configured execute
// timeout (or until ctx ends), and returns its row as it then is.
func (s *Service) Wait(ctx context.Context, h *Handle) (*models.Execution, error) {
	defer h.Release()
	if h.wait != nil && (h.Execution.Kind != models.KindBatch || h.Execution.TotalItems <= s.opts.BatchSyncMax) {
		wctx, cancel := context.WithTimeout(ctx, s.opts.ExecuteTimeout)
		h.wait(wctx)
		cancel()
	}
	return s.Get(ctx, h.Execution.ID)
}

// Get reads an execution row.
func (s *Service) Get(ctx context.Context, id string) (*models.Execution, error) {
	var ex models.Execution
	err := s.db.WithContext(ctx).Take(&ex, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.New(apperr.ExecutionNotFound, "execution %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read execution %s: %w", id, err)
	}
	return &ex, nil
}

// WorkflowURL is the Temporal UI's page of an execution's workflow ("" =
// no UI configured).
func (s *Service) WorkflowURL(ex *models.Execution) string {
	if s.opts.UIURL == "" || ex.WorkflowID == "" {
		return ""
	}
	return strings.TrimRight(s.opts.UIURL, "/") + "/namespaces/" + url.PathEscape(s.opts.Namespace) +
		"/workflows/" + url.PathEscape(ex.WorkflowID)
}

// Totals counts a batch's items by status.
func (s *Service) Totals(ctx context.Context, batchID string) (*engine.BatchTotals, error) {
	return s.eng.Totals(ctx, batchID)
}

// BatchItems lists a batch's items in order, outcome columns only.
func (s *Service) BatchItems(ctx context.Context, batchID string) ([]models.Execution, error) {
	var rows []models.Execution
	err := s.db.WithContext(ctx).Select("id", "batch_index", "status", "error_code", "error_message", "reverted_by").
		Where("batch_id = ?", batchID).Order("batch_index").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list items of batch %s: %w", batchID, err)
	}
	return rows, nil
}

// Filter narrows List. Empty members do not filter.
type Filter struct {
	ActionTypeID, Actor, Target, Status, Batch, Kind string
	Since                                            time.Time
	// OnlyActorID limits the list to one actor's executions (callers
	// without the audit permission).
	OnlyActorID string
}

// Statuses and Kinds are the values Filter accepts.
var (
	Statuses = []string{models.StatusQueued, models.StatusRunning, models.StatusSucceeded, models.StatusFailed, models.StatusPartial}
	Kinds    = []string{models.KindExecute, models.KindBatch, models.KindBatchItem, models.KindInlineEdit, models.KindWhatIf, models.KindRevert}
)

// List lists executions newest first, limit rows from offset.
func (s *Service) List(ctx context.Context, f Filter, offset, limit int) ([]models.Execution, error) {
	q := s.db.WithContext(ctx).Model(&models.Execution{})
	for col, v := range map[string]string{"action_type_id": f.ActionTypeID, "target_object_id": f.Target,
		"status": f.Status, "batch_id": f.Batch, "kind": f.Kind, "actor_id": f.OnlyActorID} {
		if v != "" {
			q = q.Where(col+" = ?", v)
		}
	}
	if f.Actor != "" {
		q = q.Where("actor_id = ? OR actor_name = ?", f.Actor, f.Actor)
	}
	if !f.Since.IsZero() {
		q = q.Where("created_at >= ?", f.Since.UTC())
	}
	var rows []models.Execution
	if err := q.Order("created_at DESC, id").Offset(offset).Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list executions: %w", err)
	}
	return rows, nil
}

func newExecution(at *engine.ActionType, actor *models.User, guest bool, kind, target string, params map[string]any, justification string) *models.Execution {
	id := uuid.NewString()
	return &models.Execution{
		ID: id, Kind: kind, WorkflowID: workflows.WorkflowID(at.Name, id),
		ActionTypeID: at.ID, ActionTypeName: at.Name, ActionVersion: at.Version,
		ActorID: actor.ID, ActorName: actor.Username, ActorGuest: guest,
		TargetObjectID: target, Parameters: models.NewNumJSON(params),
		Justification: justification, Status: models.StatusQueued,
	}
}

// requestShape is an execute request as clients send it; keys recorded
// before this package existed hashed this shape, so it stays.
type requestShape struct {
	TargetObjectID string         `json:"target_object_id"`
	Parameters     map[string]any `json:"parameters"`
	Justification  string         `json:"justification"`
}

// Identity is the hash an Idempotency-Key stands for: the parts of the
// client's request, in order.
func Identity(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		b, _ := json.Marshal(p)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
