package automations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/models"
)

// StartRequest is an execution an automation starts: the action run as
// the owner, the event's object as its target, the parameters filled from
// the event.
type StartRequest struct {
	OwnerID, ActionTypeID, TargetID string
	Parameters                      map[string]any
	Justification                   string
	// Key is the execution's idempotency key (per automation and event or
	// scheduled run): a second start with it answers the first execution.
	Key string
	// AutomationID and Depth are the execution's lineage.
	AutomationID string
	Depth        int
}

// Starter starts executions the way the API's execute does (app gives
// executions.Service behind it), so the action's policy is checked for
// the owner in the execution's authorize step.
type Starter interface {
	Start(ctx context.Context, r StartRequest) (executionID string, err error)
}

// ErrOwnerDisabled is what a Starter answers for an automation whose owner
// is disabled: the firing is recorded skipped.
var ErrOwnerDisabled = errors.New("the automation's owner is disabled")

// Dispatcher turns undispatched events into executions: at most one per
// matching, unpaused automation and event (see docs/automations.md,
// "Exactly once").
type Dispatcher struct {
	DB    *gorm.DB
	Start Starter
	// MaxDepth bounds lineage (0: defaults.AutomationMaxDepth).
	MaxDepth int
	// Batch is how many events one pass claims (0: 100).
	Batch int
	Log   *slog.Logger
}

// Run dispatches until ctx ends, polling every poll when there is nothing
// to do and backing off the same after an error.
func (d *Dispatcher) Run(ctx context.Context, poll time.Duration) {
	if poll <= 0 {
		poll = defaults.AutomationPoll
	}
	var pruned time.Time
	for ctx.Err() == nil {
		if time.Since(pruned) > pruneEvery {
			if err := d.Prune(ctx, defaults.AutomationEventRetention); err != nil && ctx.Err() == nil {
				d.log().Error("prune dispatched automation events", "err", err)
			}
			pruned = time.Now()
		}
		n, err := d.DispatchOnce(ctx)
		if err != nil && ctx.Err() == nil {
			d.log().Error("dispatch automation events", "err", err)
		}
		if n > 0 && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
}

// pruneEvery is how often Run deletes old dispatched events.
const pruneEvery = time.Hour

// Prune deletes the events dispatched more than keep ago: their firings
// hold what they did, and the table would otherwise grow with every
// edit. Replicas may prune at once; a delete is idempotent.
func (d *Dispatcher) Prune(ctx context.Context, keep time.Duration) error {
	cutoff := time.Now().UTC().Add(-keep)
	err := d.DB.WithContext(ctx).Where("dispatched_at IS NOT NULL AND dispatched_at < ?", cutoff).
		Delete(&models.AutomationEvent{}).Error
	if err != nil {
		return fmt.Errorf("delete automation events dispatched before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	return nil
}

func (d *Dispatcher) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}

// DispatchOnce dispatches one batch of events and says how many. On
// Postgres the batch is claimed with FOR UPDATE SKIP LOCKED in a
// transaction that also records the firings and marks the events, so
// replicas share the work and never take the same event; SQLite has one
// process, which dispatches alone.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (int, error) {
	if !models.IsPostgres(d.DB) {
		return d.pass(ctx, d.DB.WithContext(ctx), false)
	}
	var n int
	err := d.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		n, err = d.pass(ctx, tx, true)
		return err
	})
	return n, err
}

// pass claims a batch through w and dispatches each event of it.
func (d *Dispatcher) pass(ctx context.Context, w *gorm.DB, lock bool) (int, error) {
	evs, err := d.claim(w, lock)
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	autos, err := d.objectAutomations(w)
	if err != nil {
		return 0, err
	}
	for i := range evs {
		if err := d.dispatch(ctx, w, &evs[i], autos); err != nil {
			return i, err
		}
	}
	return len(evs), nil
}

// claim reads the oldest undispatched events, at most one per subject:
// an event waits while an earlier one of its subject is undispatched (or
// claimed by another replica), so the events of one object start in
// order.
func (d *Dispatcher) claim(w *gorm.DB, lock bool) ([]models.AutomationEvent, error) {
	batch := d.Batch
	if batch <= 0 {
		batch = 100
	}
	q := w.Where("dispatched_at IS NULL").
		Where("NOT EXISTS (SELECT 1 FROM automation_events p WHERE p.subject = automation_events.subject AND p.dispatched_at IS NULL AND p.seq < automation_events.seq)").
		Order("seq").Limit(batch)
	if lock {
		q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
	}
	var evs []models.AutomationEvent
	if err := q.Find(&evs).Error; err != nil {
		return nil, fmt.Errorf("claim automation events: %w", err)
	}
	return evs, nil
}

// objectAutomations are the object-triggered automations, paused ones
// included (a paused one matches nothing; reading them all keeps the
// query one).
func (d *Dispatcher) objectAutomations(w *gorm.DB) ([]models.Automation, error) {
	var rows []models.Automation
	if err := w.Where("trigger_kind = ?", TriggerObject).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read object automations: %w", err)
	}
	return rows, nil
}

// dispatch fires every matching automation for ev and marks it
// dispatched.
func (d *Dispatcher) dispatch(ctx context.Context, w *gorm.DB, ev *models.AutomationEvent, autos []models.Automation) error {
	for i := range autos {
		a := &autos[i]
		if a.Paused || !matches(a, ev) {
			continue
		}
		if err := d.fire(ctx, w, a, ev); err != nil {
			return err
		}
	}
	now := time.Now().UTC()
	if err := w.Model(&models.AutomationEvent{}).Where("seq = ?", ev.Seq).Update("dispatched_at", now).Error; err != nil {
		return fmt.Errorf("mark automation event %d dispatched: %w", ev.Seq, err)
	}
	return nil
}

// matches says whether a's object trigger covers ev.
func matches(a *models.Automation, ev *models.AutomationEvent) bool {
	if ev.Source != models.EventSourceObject && ev.Source != "" {
		return false
	}
	t := viewOf(a).Trigger
	typeID, _ := a.Trigger.V["object_type_id"].(string)
	if typeID == "" {
		typeID = t.ObjectType
	}
	return typeID == ev.ObjectTypeID && slices.Contains(t.On, ev.Change)
}

// eventKey is a firing's key for an event; the execution's idempotency
// key is derived from it.
func eventKey(seq uint64) string { return fmt.Sprintf("event:%d", seq) }

// executionKey is the idempotency key of the execution automation id
// starts for firing key k.
func executionKey(id, k string) string { return "automation:" + id + ":" + k }

// fire records what ev does for a: nothing new if a firing is already
// recorded (a second pass over the same event), a skip past the depth
// limit or for a disabled owner, else the execution started. An error
// that may pass (the database, Temporal unavailable) is returned, and
// the event stays undispatched for the next pass, whose start with the
// same key finds the same execution.
func (d *Dispatcher) fire(ctx context.Context, w *gorm.DB, a *models.Automation, ev *models.AutomationEvent) error {
	key := eventKey(ev.Seq)
	if done, err := fired(w, a.ID, key); done || err != nil {
		return err
	}
	f := models.AutomationFiring{AutomationID: a.ID, Key: key, EventSeq: ev.Seq, Depth: ev.Depth + 1}
	if f.Depth > d.maxDepth() {
		f.Status = models.FiringSkipped
		f.Reason = fmt.Sprintf("depth %d exceeds the limit of %d (--automation-max-depth)", f.Depth, d.maxDepth())
		return record(w, &f)
	}
	r := requestFor(a, ev)
	r.Key, r.Depth = executionKey(a.ID, key), f.Depth
	return d.startAndRecord(ctx, w, &f, r)
}

// startAndRecord starts r and records f as its outcome.
func (d *Dispatcher) startAndRecord(ctx context.Context, w *gorm.DB, f *models.AutomationFiring, r StartRequest) error {
	id, err := d.Start.Start(ctx, r)
	switch {
	case errors.Is(err, ErrOwnerDisabled):
		f.Status, f.Reason = models.FiringSkipped, err.Error()
	case err != nil && transient(err):
		return fmt.Errorf("start the execution of automation %s (%s): %w", f.AutomationID, f.Key, err)
	case err != nil:
		f.Status, f.Reason = models.FiringFailed, err.Error()
	default:
		f.Status, f.ExecutionID = models.FiringStarted, &id
	}
	return record(w, f)
}

// transient says whether a start's error may pass on a retry: anything
// but a refusal (an apperr other than Unavailable) is.
func transient(err error) bool {
	var ae *apperr.Error
	if !errors.As(err, &ae) {
		return true
	}
	return ae.Code == apperr.Unavailable
}

func (d *Dispatcher) maxDepth() int {
	if d.MaxDepth > 0 {
		return d.MaxDepth
	}
	return defaults.AutomationMaxDepth
}

// fired says whether automation id's firing key is recorded.
func fired(w *gorm.DB, id, key string) (bool, error) {
	var n int64
	if err := w.Model(&models.AutomationFiring{}).Where("automation_id = ? AND firing_key = ?", id, key).Count(&n).Error; err != nil {
		return false, fmt.Errorf("look up firing %s of automation %s: %w", key, id, err)
	}
	return n > 0, nil
}

// record writes f once: a concurrent or repeated record of the same key
// leaves the first.
func record(w *gorm.DB, f *models.AutomationFiring) error {
	err := w.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "automation_id"}, {Name: "firing_key"}}, DoNothing: true}).Create(f).Error
	if err != nil {
		return fmt.Errorf("record firing %s of automation %s: %w", f.Key, f.AutomationID, err)
	}
	return nil
}

// requestFor is the execution a fires for ev: the object as the target
// (none for a deleted one, which no longer exists) and the parameters
// rendered over the event.
func requestFor(a *models.Automation, ev *models.AutomationEvent) StartRequest {
	props := ev.After.V
	target := ev.ObjectID
	if ev.Change == "deleted" {
		props, target = ev.Before.V, ""
	}
	scope := map[string]any{
		"object": map[string]any{"id": ev.ObjectID, "object_type_id": ev.ObjectTypeID, "properties": props},
		"before": map[string]any{"properties": ev.Before.V},
		"event": map[string]any{"seq": ev.Seq, "source": ev.Source, "change": ev.Change, "execution_id": ev.ExecutionID,
			"path": ev.Path, "size": ev.Size, "sha256": ev.SHA256, "etag": ev.ETag},
		"automation": map[string]any{"id": a.ID, "name": a.Name},
	}
	return StartRequest{OwnerID: a.OwnerID, ActionTypeID: a.ActionType, TargetID: target, AutomationID: a.ID,
		Parameters:    fillParameters(a.Parameters.V, scope),
		Justification: fmt.Sprintf("automation %q: object %s %s (event %d)", a.Name, ev.ObjectID, ev.Change, ev.Seq)}
}
