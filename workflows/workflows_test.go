package workflows

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ontoflow/ontoflow/activities"
	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// fakeSteps records the steps the workflow ran. The steps' real behaviour
// is covered end to end (cmd/ontoflow); these tests pin the workflow's
// order, its failure path and the batch's chunking.
type fakeSteps struct {
	calls    []string
	refuse   map[string]bool // execution id -> Authorize refuses
	flaky    int             // RunOperation fails this many times first
	recorded map[string]string
	chunks   [][2]int
}

// register replaces each step the workflows call (by method value) with
// the fake's function.
func (f *fakeSteps) register(env *testsuite.TestWorkflowEnvironment) {
	reg := func(step, fn any) {
		env.OnActivity(step, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Maybe().Return(fn)
	}
	var a *activities.Activities
	reg(a.Validate, func(ctx context.Context, id string) (*engine.Prepared, error) {
		f.calls = append(f.calls, "validate:"+id)
		return &engine.Prepared{ExecutionID: id, HasNotifications: true,
			Deliveries: []engine.Delivery{{Channel: "in_app"}, {Channel: "slack", Remote: true}}}, nil
	})
	reg(a.Authorize, func(ctx context.Context, p *engine.Prepared) error {
		f.calls = append(f.calls, "authorize:"+p.ExecutionID)
		if f.refuse[p.ExecutionID] {
			return temporal.NewNonRetryableApplicationError("no", string(apperr.PermissionDenied), nil)
		}
		return nil
	})
	reg(a.Apply, func(ctx context.Context, p *engine.Prepared, last bool) (*engine.Outcome, error) {
		f.calls = append(f.calls, fmt.Sprintf("run:%s:last=%v", p.ExecutionID, last))
		if f.flaky > 0 {
			f.flaky--
			return nil, errors.New("database briefly unavailable")
		}
		return &engine.Outcome{}, nil
	})
	reg(a.Deliver, func(ctx context.Context, id string, d engine.Delivery, last bool) error {
		local := "local"
		if !activity.GetInfo(ctx).IsLocalActivity {
			local = "activity"
		}
		f.calls = append(f.calls, fmt.Sprintf("deliver:%s:%s:%s:last=%v", id, d.Channel, local, last))
		return nil
	})
	reg(a.RecordFailure, func(ctx context.Context, id string, fl engine.Failure) error {
		f.recorded[id] = fl.Code
		return nil
	})
	reg(a.ListBatchChunk, func(ctx context.Context, batchID string, from, to int) ([]string, error) {
		f.chunks = append(f.chunks, [2]int{from, to})
		var ids []string
		for i := from; i < to; i++ {
			ids = append(ids, string(rune('a'+i)))
		}
		return ids, nil
	})
	reg(a.FinishBatch, func(ctx context.Context, batchID string) (*engine.BatchTotals, error) {
		return &engine.BatchTotals{Total: 5, Status: models.StatusPartial}, nil
	})
}

func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakeSteps) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := &fakeSteps{refuse: map[string]bool{}, recorded: map[string]string{}}
	f.register(env)
	New(&activities.Activities{}).Register(env)
	return env, f
}

func TestActionWorkflowRunsStepsInOrderAndRetriesInfrastructure(t *testing.T) {
	env, f := newEnv(t)
	f.flaky = 2
	env.ExecuteWorkflow(ActionWorkflowName, ActionInput{ExecutionID: "x"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res ItemResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Status != models.StatusSucceeded {
		t.Fatalf("result %+v, %v", res, err)
	}
	// The workflow names the last step; a remote channel's delivery is a
	// regular activity, the in-app one a local activity.
	want := "[validate:x authorize:x run:x:last=false run:x:last=false run:x:last=false deliver:x:in_app:local:last=false deliver:x:slack:activity:last=true]"
	if got := fmtCalls(f.calls); got != want {
		t.Errorf("steps = %s, want %s", got, want)
	}
}

func TestActionWorkflowRecordsRefusalAndSkipsLaterSteps(t *testing.T) {
	env, f := newEnv(t)
	f.refuse["x"] = true
	env.ExecuteWorkflow(ActionWorkflowName, ActionInput{ExecutionID: "x"})
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != string(apperr.PermissionDenied) {
		t.Fatalf("workflow error = %v, want PermissionDenied", err)
	}
	if got := fmtCalls(f.calls); got != "[validate:x authorize:x]" {
		t.Errorf("steps after a refusal = %s: no run, no notify", got)
	}
	if f.recorded["x"] != string(apperr.PermissionDenied) {
		t.Errorf("recorded failure = %q", f.recorded["x"])
	}
}

func TestBatchWorkflowChunksItems(t *testing.T) {
	env, f := newEnv(t)
	f.refuse["b"] = true
	env.ExecuteWorkflow(BatchWorkflowName, BatchInput{BatchID: "batch", Total: 5, ChildItems: 2, Concurrency: 2})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var tot engine.BatchTotals
	if err := env.GetWorkflowResult(&tot); err != nil || tot.Status != models.StatusPartial {
		t.Fatalf("totals %+v, %v", tot, err)
	}
	if len(f.chunks) != 3 {
		t.Errorf("chunks = %v, want [0,2) [2,4) [4,5)", f.chunks)
	}
	if f.recorded["b"] != string(apperr.PermissionDenied) || len(f.recorded) != 1 {
		t.Errorf("failures = %v: one refused item must not stop the others", f.recorded)
	}
}

func fmtCalls(c []string) string {
	out := "["
	for i, s := range c {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out + "]"
}
