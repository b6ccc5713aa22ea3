package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// AutomationScheduleWorkflowName is the workflow an automation's Temporal
// Schedule starts at each scheduled time; AutomationFireActivityName the
// activity it runs (automations.Dispatcher.FireSchedule, registered by the
// worker).
const (
	AutomationScheduleWorkflowName = "AutomationScheduleWorkflow"
	AutomationFireActivityName     = "AutomationFire"
)

// AutomationSchedule fires automation automationID once for this run: one
// activity, retried until it records the firing. Its key is the run's
// workflow id (the schedule's id and the scheduled time), so a retry
// after a crash starts the same execution, not a second one.
func AutomationSchedule(ctx workflow.Context, automationID string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	run := workflow.GetInfo(ctx).WorkflowExecution.ID
	return workflow.ExecuteActivity(ctx, AutomationFireActivityName, automationID, run).Get(ctx, nil)
}
