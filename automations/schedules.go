package automations

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
)

// ScheduleSpec is what a schedule trigger asks of Temporal.
type ScheduleSpec struct {
	AutomationID string
	Cron         string
	Every        time.Duration
	Paused       bool
}

// Schedules keeps one Temporal Schedule per schedule-triggered automation.
type Schedules interface {
	// Sync creates or replaces the automation's schedule.
	Sync(ctx context.Context, s ScheduleSpec) error
	// Delete removes it (none is no error).
	Delete(ctx context.Context, automationID string) error
}

// ScheduleID is the Temporal Schedule of automation id.
func ScheduleID(id string) string { return "automation-" + id }

// TemporalSchedules implements Schedules with Temporal Schedules whose
// action starts Workflow (the workflow that fires the automation) with
// the automation's id. Temporal keeps the time: a replica down at the
// scheduled time does not lose the run (the catch-up window), and two
// replicas do not both fire it.
type TemporalSchedules struct {
	Client    client.ScheduleClient
	TaskQueue string
	Workflow  string
}

// Sync implements Schedules.
func (t *TemporalSchedules) Sync(ctx context.Context, s ScheduleSpec) error {
	spec := client.ScheduleSpec{}
	if s.Cron != "" {
		spec.CronExpressions = []string{s.Cron}
	} else {
		spec.Intervals = []client.ScheduleIntervalSpec{{Every: s.Every}}
	}
	action := &client.ScheduleWorkflowAction{ID: ScheduleID(s.AutomationID), Workflow: t.Workflow,
		Args: []any{s.AutomationID}, TaskQueue: t.TaskQueue}
	_, err := t.Client.Create(ctx, client.ScheduleOptions{ID: ScheduleID(s.AutomationID), Spec: spec, Action: action,
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, Paused: s.Paused})
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return scheduleErr("create", s.AutomationID, err)
	}
	err = t.Client.GetHandle(ctx, ScheduleID(s.AutomationID)).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sch := in.Description.Schedule
			sch.Spec, sch.Action = &spec, action
			if sch.State == nil {
				sch.State = &client.ScheduleState{}
			}
			sch.State.Paused = s.Paused
			return &client.ScheduleUpdate{Schedule: &sch}, nil
		}})
	return scheduleErr("update", s.AutomationID, err)
}

// Delete implements Schedules.
func (t *TemporalSchedules) Delete(ctx context.Context, id string) error {
	err := t.Client.GetHandle(ctx, ScheduleID(id)).Delete(ctx)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return scheduleErr("delete", id, err)
}

// scheduleErr answers a Temporal failure as Unavailable: the definition's
// change is rolled back and may be retried.
func scheduleErr(what, id string, err error) error {
	if err == nil {
		return nil
	}
	return apperr.New(apperr.Unavailable, "%s the schedule of automation %s in Temporal: %v; nothing was changed, retry", what, id, err)
}

// syncSchedule creates or updates row's schedule when it has a schedule
// trigger.
func (s *Store) syncSchedule(ctx context.Context, row *models.Automation) error {
	if s.Schedules == nil || row.TriggerKind != TriggerSchedule {
		return nil
	}
	t := viewOf(row).Trigger
	spec := ScheduleSpec{AutomationID: row.ID, Cron: t.Cron, Paused: row.Paused}
	if t.Interval != "" {
		d, err := time.ParseDuration(t.Interval)
		if err != nil {
			return fmt.Errorf("automation %s's interval %q: %w", row.ID, t.Interval, err)
		}
		spec.Every = d
	}
	return s.Schedules.Sync(ctx, spec)
}

func (s *Store) deleteSchedule(ctx context.Context, id string) error {
	if s.Schedules == nil {
		return nil
	}
	return s.Schedules.Delete(ctx, id)
}

// FireSchedule fires automation id for one scheduled run (run: the
// scheduled workflow's id, unique per run). A deleted automation, or one
// no longer on a schedule, fires nothing; a paused one (a run triggered
// by hand) records a skip. The run's key makes a retried activity start
// the same execution.
func (d *Dispatcher) FireSchedule(ctx context.Context, id, run string) error {
	var a models.Automation
	err := d.DB.WithContext(ctx).Take(&a, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read automation %s: %w", id, err)
	}
	if a.TriggerKind != TriggerSchedule {
		return nil
	}
	w := d.DB.WithContext(ctx)
	key := "schedule:" + run
	if done, err := fired(w, a.ID, key); done || err != nil {
		return err
	}
	f := models.AutomationFiring{AutomationID: a.ID, Key: key, Depth: 1}
	if a.Paused {
		f.Status, f.Reason = models.FiringSkipped, "the automation is paused"
		return record(w, &f)
	}
	scope := map[string]any{"automation": map[string]any{"id": a.ID, "name": a.Name},
		"schedule": map[string]any{"run": run, "time": time.Now().UTC().Format(time.RFC3339)}}
	r := StartRequest{OwnerID: a.OwnerID, ActionTypeID: a.ActionType, AutomationID: a.ID, Depth: 1,
		Parameters: fillParameters(a.Parameters.V, scope), Key: executionKey(a.ID, key),
		Justification: fmt.Sprintf("automation %q: scheduled run %s", a.Name, run)}
	return d.startAndRecord(ctx, w, &f, r)
}
