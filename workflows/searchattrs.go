package workflows

import (
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ontoflow/ontoflow/models"
)

// Custom search attributes set on every execution, so the Temporal UI can
// filter by action type, actor, target object, status and kind, e.g.
// OntoflowActionType = "approve-order" AND OntoflowStatus = "failed".
var (
	SAActionType  = temporal.NewSearchAttributeKeyKeyword("OntoflowActionType")
	SAActor       = temporal.NewSearchAttributeKeyKeyword("OntoflowActor")
	SATarget      = temporal.NewSearchAttributeKeyKeyword("OntoflowTarget")
	SAStatus      = temporal.NewSearchAttributeKeyKeyword("OntoflowStatus")
	SAKind        = temporal.NewSearchAttributeKeyKeyword("OntoflowKind")
	SAExecutionID = temporal.NewSearchAttributeKeyKeyword("OntoflowExecutionID")
)

// SearchAttributes lists the custom search attributes to register on the
// namespace (embedded server at start; external cluster by `ontoflow
// migrate` and at start of serve/worker).
func SearchAttributes() map[string]enumspb.IndexedValueType {
	m := map[string]enumspb.IndexedValueType{}
	for _, k := range []temporal.SearchAttributeKeyKeyword{SAActionType, SAActor, SATarget, SAStatus, SAKind, SAExecutionID} {
		m[k.GetName()] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	return m
}

// Version of the status search attribute's running value
// (workflow.GetVersion): histories recorded before it replay without the
// upsert.
const (
	changeStatusRunning  = "status-running"
	statusRunningVersion = 1
)

// markRunning sets OntoflowStatus to running as the workflow's first step
// starts (it was queued from the start request); the execution row is
// marked running by that step itself. Its command is guarded by
// GetVersion, so workflows recorded before it replay unchanged.
func markRunning(ctx workflow.Context) {
	if workflow.GetVersion(ctx, changeStatusRunning, workflow.DefaultVersion, statusRunningVersion) == workflow.DefaultVersion {
		return
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, SAStatus.ValueSet(models.StatusRunning))
}
