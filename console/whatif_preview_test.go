package console

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/whatif"
)

// TestPreviewResult: a what-if's preview as the console's fragment shows
// it — the changed properties per object (a delete's after values empty),
// each notification, the webhook request.
func TestPreviewResult(t *testing.T) {
	pv := &executions.WhatIfPreview{
		Objects: []whatif.ObjectChange{
			{ObjectID: "a", ObjectTypeID: "T", Change: whatif.Updated, Diff: []whatif.PropertyDiff{{Property: "status", Before: "open", After: "closed"}}},
			{ObjectID: "b", ObjectTypeID: "T", Change: whatif.Deleted, Diff: []whatif.PropertyDiff{{Property: "title", Before: "t", After: nil}}},
		},
		Notifications: []whatif.NotificationPreview{{Channel: "in_app", Username: "ann", Title: "closed"}},
		Effect:        json.RawMessage(`{"method":"POST","url":"https://crm.example/sync","preview":true}`),
	}
	got := previewResult(pv)
	if len(got.Objects) != 2 || got.Objects[0].Op != "update_object" || got.Objects[1].Op != "delete_object" ||
		!reflect.DeepEqual(got.Objects[0].After, map[string]any{"status": "closed"}) ||
		!reflect.DeepEqual(got.Objects[1].After, map[string]any{"title": nil}) {
		t.Errorf("objects %+v", got.Objects)
	}
	if !reflect.DeepEqual(got.Notifications, []string{"in_app to ann: closed"}) || !reflect.DeepEqual(got.Webhooks, []string{"POST https://crm.example/sync"}) {
		t.Errorf("notifications %v, webhooks %v", got.Notifications, got.Webhooks)
	}
}
