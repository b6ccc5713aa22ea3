package workflows

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ontoflow/ontoflow/activities"
	"github.com/ontoflow/ontoflow/models"
)

// The histories in testdata were recorded from a real server by
// `go run ./cmd/actionbench -record DIR` (one successful execution, one
// with a notification, one refused, a batch and its chunk; the v1-* ones
// with the versioned steps, among them a webhook whose effect step was
// retried, a function, a Slack delivery step, a what-if and a revert
// with its notification; the v2-* ones with the running status's
// search attribute upsert). New shapes are
// recorded beside the old files, never over them: the old ones stand for
// executions in flight. Replaying them against the current code is what
// guards the rule in the package comment: a change to the steps that is
// not behind workflow.GetVersion fails here, before it fails the
// executions in flight at a deploy.
func newReplayer(t *testing.T) worker.WorkflowReplayer {
	t.Helper()
	r := worker.NewWorkflowReplayer()
	New(nil).Register(r)
	return r
}

func TestReplayRecordedHistories(t *testing.T) {
	data, err := os.ReadFile("testdata/workflow-ids.json")
	if err != nil {
		t.Fatal(err)
	}
	var ids map[string]string
	if err := json.Unmarshal(data, &ids); err != nil || len(ids) < 5 {
		t.Fatalf("testdata/workflow-ids.json: %v, %d histories", err, len(ids))
	}
	for file, id := range ids {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = newReplayer(t).ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: id, RunID: "recorded"},
			})
			if err != nil {
				t.Fatalf("replay %s: %v", file, err)
			}
		})
	}
}

// TestReplayCatchesAnUnversionedChange shows the replay test can fail: a
// version of the workflow that skips the authorize step, without
// GetVersion, does not replay the recorded history.
func TestReplayCatchesAnUnversionedChange(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, in ActionInput) (ItemResult, error) {
		ctx = stepOptions(ctx)
		var prep struct{}
		var steps *activities.Activities
		_ = workflow.ExecuteLocalActivity(ctx, steps.Validate, in.ExecutionID).Get(ctx, &prep)
		_ = workflow.ExecuteLocalActivity(ctx, steps.RunOperation, &prep).Get(ctx, nil)
		return ItemResult{ExecutionID: in.ExecutionID, Status: models.StatusSucceeded}, nil
	}, workflow.RegisterOptions{Name: "ActionWorkflow"})
	err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/action-succeeded.json")
	if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("replay of a changed workflow: got %v, want the nondeterminism error TMPRL1100", err)
	}
}
