// Package render renders a notification side effect for one recipient:
// the {{ path }} placeholders of its title, body and metadata filled from
// the execution, with the target and the object only for a recipient who
// may read them.
package render

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications/delivery"
)

// Scope is what {{ path }} in titles, bodies and metadata can name.
func Scope(at *domain.ActionType, actor *models.User, before, after *domain.Object, params map[string]any, ex *models.Execution) map[string]any {
	obj := func(o *domain.Object) any {
		if o == nil {
			return nil
		}
		return map[string]any{"id": o.ID, "object_type_id": o.ObjectTypeID, "properties": o.Properties,
			"marking": o.Marking, "created_by": o.CreatedBy}
	}
	return map[string]any{
		"action":        map[string]any{"id": at.ID, "name": at.Name, "display_name": at.DisplayName, "version": at.Version},
		"actor":         map[string]any{"id": actor.ID, "username": actor.Username, "organization": actor.Organization},
		"target":        obj(before),
		"object":        obj(after),
		"parameters":    params,
		"justification": ex.Justification,
		"execution":     map[string]any{"id": ex.ID, "kind": ex.Kind, "workflow_id": ex.WorkflowID},
	}
}

// Placeholder matches a {{ path }}; its first group is the path.
var Placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}`)

// Text replaces {{ path }} with the value at path in scope; a path that
// names nothing renders empty.
func Text(s string, scope map[string]any) string {
	return Placeholder.ReplaceAllStringFunc(s, func(m string) string {
		path := Placeholder.FindStringSubmatch(m)[1]
		var cur any = scope
		for _, part := range strings.Split(path, ".") {
			mm, ok := cur.(map[string]any)
			if !ok {
				return ""
			}
			cur = mm[part]
		}
		switch v := cur.(type) {
		case nil:
			return ""
		case string:
			return v
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return ""
			}
			return string(b)
		}
	})
}

// Message renders side effect n (the index-th of the action) for
// recipient r over scope.
func Message(n *domain.NotificationSideEffect, index int, scope map[string]any, ex *models.Execution, at *domain.ActionType, r *models.User) delivery.Message {
	meta := map[string]any{}
	for k, v := range n.Metadata {
		if s, ok := v.(string); ok {
			v = Text(s, scope)
		}
		meta[k] = v
	}
	return delivery.Message{SideEffect: index, Effect: n, Recipient: r, ExecutionID: ex.ID, ActionTypeID: at.ID, ActionVersion: at.Version,
		Title: Text(n.Title, scope), Body: Text(n.Body, scope), Metadata: meta}
}

// Scopes renders each recipient's notification with what that recipient
// may read: the target (as the operation found it) and the object (as it
// left it) are in the scope only for a recipient whose read rule admits
// them; for another they are absent and their placeholders render empty.
// So a side effect cannot carry an object's data to someone the object is
// hidden from. At most two scopes are built per execution.
type Scopes struct {
	// CanRead is the read rule (the ontology's).
	CanRead       func(u *models.User, marking, organization string) bool
	At            *domain.ActionType
	Actor         *models.User
	Before, After *domain.Object
	Params        map[string]any
	Ex            *models.Execution
	full, bare    map[string]any
}

// For returns u's scope.
func (s *Scopes) For(u *models.User) map[string]any {
	readable := func(o *domain.Object) bool { return o == nil || s.CanRead(u, o.Marking, o.Organization) }
	if readable(s.Before) && readable(s.After) {
		if s.full == nil {
			s.full = Scope(s.At, s.Actor, s.Before, s.After, s.Params, s.Ex)
		}
		return s.full
	}
	if s.bare == nil {
		s.bare = Scope(s.At, s.Actor, nil, nil, s.Params, s.Ex)
	}
	return s.bare
}
