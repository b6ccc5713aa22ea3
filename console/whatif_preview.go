package console

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/engine/kinds/invokewebhook"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/whatif"
)

// WhatIfPreview is the console's Preview through what-if: the same
// workflow as execute (kind what-if, in the action log) on a branch that
// is deleted again once read, showing each touched object's changed
// properties before and after, the notifications that would be sent and
// the webhook request that would be made — nothing written, sent or
// called.
func WhatIfPreview(execs *executions.Service) PreviewFunc {
	return func(ctx context.Context, r executions.Request) (*PreviewResult, error) {
		res, err := execs.WhatIf(ctx, r, "")
		if err != nil {
			return nil, err
		}
		defer execs.DropBranch(ctx, r.Actor, res)
		if err := refusal(res.Execution); err != nil {
			return nil, err
		}
		pv, err := res.Preview()
		if err != nil {
			return nil, err
		}
		if pv == nil {
			return nil, apperr.New(apperr.Unavailable, "the preview is still running; try again")
		}
		return previewResult(pv), nil
	}
}

// refusal is a refused what-if's typed error, with its details (the
// failure failureOf reads, as an error).
func refusal(ex *models.Execution) error {
	f := failureOf(ex)
	if f == nil {
		return nil
	}
	e := apperr.New(apperr.Code(f.Code), "%s", f.Message)
	e.Details = f.Details
	return e
}

// previewResult shapes a what-if's preview for the console's fragment:
// per object the properties that differ (a deleted object's with empty
// after values).
func previewResult(pv *executions.WhatIfPreview) *PreviewResult {
	res := &PreviewResult{}
	ops := map[string]string{whatif.Created: models.EditCreateObject, whatif.Updated: models.EditUpdateObject, whatif.Deleted: models.EditDeleteObject}
	for _, o := range pv.Objects {
		po := PreviewObject{ObjectTypeID: o.ObjectTypeID, ObjectID: o.ObjectID, Op: ops[o.Change], Before: map[string]any{}, After: map[string]any{}}
		for _, d := range o.Diff {
			po.Before[d.Property], po.After[d.Property] = d.Before, d.After
		}
		res.Objects = append(res.Objects, po)
	}
	for _, n := range pv.Notifications {
		res.Notifications = append(res.Notifications, fmt.Sprintf("%s to %s: %s", n.Channel, n.Username, n.Title))
	}
	var call invokewebhook.Call
	if len(pv.Effect) > 0 && json.Unmarshal(pv.Effect, &call) == nil && call.URL != "" {
		res.Webhooks = append(res.Webhooks, call.Method+" "+call.URL)
	}
	return res
}
