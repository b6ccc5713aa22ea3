package app

import (
	"context"
	"sync"

	"github.com/ontoflow/ontoflow/automations"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/users"
	"github.com/ontoflow/ontoflow/workflows"
)

// automationStarter starts an automation's execution through
// executions.Service, the path the API's execute takes: as the owner,
// with the firing's idempotency key, so the authorize step applies the
// action's policy to the owner and a repeated start finds the first
// execution.
type automationStarter struct {
	execs *executions.Service
	store *ontology.Store
	users *users.Store
}

// Start implements automations.Starter.
func (s automationStarter) Start(ctx context.Context, r automations.StartRequest) (string, error) {
	owner, err := s.users.Get(ctx, r.OwnerID)
	if err != nil {
		return "", err
	}
	if owner.Disabled {
		return "", automations.ErrOwnerDisabled
	}
	at, err := s.store.ActionType(ctx, r.ActionTypeID)
	if err != nil {
		return "", err
	}
	// The key stands for the firing, not the rendered request: a retry
	// after the automation was edited still finds the first execution.
	h, err := s.execs.Submit(ctx, executions.Request{Action: at, Actor: owner, Kind: models.KindExecute,
		TargetID: r.TargetID, Parameters: r.Parameters, Justification: r.Justification,
		IdempotencyKey: r.Key, Identity: executions.Identity("automation", r.AutomationID, r.Key),
		AutomationID: r.AutomationID, AutomationDepth: r.Depth}, false)
	if err != nil {
		return "", err
	}
	h.Release()
	return h.Execution.ID, nil
}

// automationStore is the automation definitions' store the API serves,
// with schedule triggers kept as Temporal Schedules.
func (a *App) automationStore(store *ontology.Store) *automations.Store {
	return &automations.Store{DB: a.DB, Actions: store,
		ObjectTypes: func(ctx context.Context, ref string) (string, error) {
			ot, err := store.ObjectType(ctx, ref)
			if err != nil {
				return "", err
			}
			return ot.ID, nil
		},
		Schedules: &automations.TemporalSchedules{Client: a.Temporal.ScheduleClient(), TaskQueue: a.Cfg.TaskQueue,
			Workflow: workflows.AutomationScheduleWorkflowName}}
}

// automationDispatcher is the dispatcher of this process's worker.
func (a *App) automationDispatcher(store *ontology.Store, eng *engine.Engine) *automations.Dispatcher {
	return &automations.Dispatcher{DB: a.DB, MaxDepth: a.Cfg.AutomationMaxDepth, Log: a.Log,
		Start: automationStarter{execs: a.executionsService(store, eng), store: store,
			users: &users.Store{DB: a.DB, Levels: a.Cfg.Markings}}}
}

// runDispatcher runs d until the returned stop, which waits for it.
func runDispatcher(ctx context.Context, d *automations.Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); d.Run(ctx, 0) }()
	return func() { cancel(); wg.Wait() }
}
