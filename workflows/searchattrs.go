package workflows

import (
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
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
