// Package worker builds the Temporal worker that runs the action engine's
// workflows and activities.
package worker

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ontoflow/ontoflow/activities"
	"github.com/ontoflow/ontoflow/workflows"
)

// Options configure the worker.
type Options struct {
	TaskQueue  string
	Activities *activities.Activities
	// StopTimeout is how long running activities get to finish when the
	// worker stops; after it they are cancelled and handed back to
	// Temporal for another worker.
	StopTimeout time.Duration
	Registerer  prometheus.Registerer
	// BatchChildItems sizes the local-activity slots a worker offers.
	BatchChildItems int
	// FireSchedule fires an automation for one scheduled run (the
	// automations' dispatcher; nil: schedule triggers fail until a worker
	// with it polls).
	FireSchedule func(ctx context.Context, automationID, run string) error
}

// New registers the engine on a worker for opts.TaskQueue (not started).
func New(c client.Client, opts Options) sdkworker.Worker {
	w := sdkworker.New(c, opts.TaskQueue, sdkworker.Options{
		WorkerStopTimeout: opts.StopTimeout,
		// Eager start reserves a workflow task slot before the start
		// request and holds it until the task completes, through the
		// server's persistence queue: with 64 slots, 50 concurrent
		// executes ran out and fell back to dispatch through matching.
		// Slots are cheap (a goroutine while busy); the local activity
		// steps are short, and the database is the real limit.
		MaxConcurrentWorkflowTaskExecutionSize:  256,
		MaxConcurrentLocalActivityExecutionSize: 64,
		MaxConcurrentWorkflowTaskPollers:        4,
		DeadlockDetectionTimeout:                5 * time.Second,
	})
	wf := workflows.New(opts.Activities)
	wf.Register(w)
	wf.RegisterActivities(w)
	w.RegisterWorkflowWithOptions(workflows.AutomationSchedule, workflow.RegisterOptions{Name: workflows.AutomationScheduleWorkflowName})
	if opts.FireSchedule != nil {
		w.RegisterActivityWithOptions(opts.FireSchedule, activity.RegisterOptions{Name: workflows.AutomationFireActivityName})
	}
	return w
}
