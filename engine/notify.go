package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology/domain"
)

// Notification outcome statuses.
const (
	Delivered = "delivered"
	Failed    = "failed"
	Skipped   = "skipped"
)

// notifyInput returns what Notify needs: the execution, its action type and
// its actor. Without the memo (a step retried in another worker) they are
// read again, but not the target: the operation may have deleted it, and
// the templates' before and after come from the recorded edits.
func (e *Engine) notifyInput(ctx context.Context, id string) (*models.Execution, *domain.ActionType, *models.User, error) {
	if ex, in, ok := e.memo.get(id); ok {
		return ex, in.Action, in.Actor, nil
	}
	ex, err := e.execution(ctx, e.db, id)
	if err != nil {
		return nil, nil, nil, err
	}
	at, err := e.onto.ActionType(ctx, ex.ActionTypeID)
	if err != nil {
		return nil, nil, nil, err
	}
	actor, err := e.actor(ctx, ex.ActorID)
	if err != nil {
		return nil, nil, nil, err
	}
	return ex, at, actor, nil
}

// Notify is the notify step, run after a successful operation only. It
// delivers each side effect on each of its channels, records every outcome
// on the execution and never returns a delivery failure: the action has
// committed and a notification cannot undo it. Recording is guarded by
// notified_at, so a retried step does not notify twice.
func (e *Engine) Notify(ctx context.Context, p *Prepared, out *Outcome) error {
	defer e.observe("notify", time.Now())
	defer e.memo.drop(p.ExecutionID)
	defer e.settle(p.ExecutionID)
	ex, at, actor, err := e.notifyInput(ctx, p.ExecutionID)
	if err != nil {
		return err
	}
	if ex.NotifiedAt != nil {
		return nil
	}
	// The memo's copy of the row predates notified_at; the update that
	// records the outcomes below is what guards against a second delivery.
	if len(out.Edits) == 0 {
		// The workflow carries no edits (see activities.RunOperation): the
		// row has them.
		out = &Outcome{Edits: ex.Edits.V, Result: out.Result}
	}
	before, after := e.beforeAfter(ctx, ex.TargetObjectID, out)
	params := ex.Parameters.V // as Run recorded them, materialized
	scopes := &recipientScopes{e: e, at: at, actor: actor, before: before, after: after, params: params, ex: ex}

	var notes []models.Notification
	var outcomes []models.NotificationOutcome
	for i, n := range at.Config.NotificationSideEffects {
		recipients, rerr := e.recipients(ctx, n, actor, before, params)
		for _, ch := range n.EffectiveChannels() {
			o := models.NotificationOutcome{Index: i, Channel: ch, Recipients: len(recipients)}
			switch {
			case rerr != nil:
				o.Status, o.Error = Failed, rerr.Error()
			case ch != "in_app":
				o.Status, o.Error = Skipped, "channel "+ch+" is not available in this release"
			case len(recipients) == 0:
				o.Status, o.Error = Skipped, "no recipients"
			default:
				o.Status = Delivered
				for _, r := range recipients {
					notes = append(notes, e.inApp(n, scopes.forUser(r), ex, at, r.ID))
				}
			}
			outcomes = append(outcomes, o)
		}
	}
	now := e.now()
	return e.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&models.Execution{}).Where("id = ? AND notified_at IS NULL", ex.ID).
			Updates(map[string]any{"notified_at": &now, "notifications": models.NewJSON(outcomes)})
		if res.Error != nil {
			return fmt.Errorf("record notification outcomes: %w", res.Error)
		}
		if res.RowsAffected == 0 || len(notes) == 0 {
			return nil
		}
		if err := tx.CreateInBatches(notes, 200).Error; err != nil {
			return fmt.Errorf("store notifications: %w", err)
		}
		return nil
	})
}

// beforeAfter reconstructs the target as the operation found it and the
// object as it left it, for templates and recipient resolution. It reads
// the first recorded edit, whatever its kind: the object it names as it
// is now (nil once deleted), and the target with the edit's before values
// laid over it — or, when the edit removed the target, as the edit
// recorded it.
func (e *Engine) beforeAfter(ctx context.Context, targetID string, out *Outcome) (before, after *Object) {
	var ed models.Edit
	if len(out.Edits) > 0 {
		ed = out.Edits[0]
	}
	if ed.ObjectID != "" {
		after, _ = e.onto.Object(ctx, nil, ed.ObjectID)
	}
	if targetID == "" {
		return nil, after
	}
	var cur *Object
	if ed.ObjectID == targetID {
		cur = after
	} else {
		cur, _ = e.onto.Object(ctx, nil, targetID)
	}
	if ed.ObjectID != targetID {
		return cur, after
	}
	if cur == nil {
		// The edit removed the target: as it recorded it.
		return &Object{ID: targetID, ObjectTypeID: ed.ObjectTypeID, Properties: ed.Before, Marking: ed.Marking,
			Organization: ed.Organization, CreatedBy: ed.CreatedBy}, nil
	}
	b := *cur
	b.Properties = map[string]any{}
	for k, v := range cur.Properties {
		b.Properties[k] = v
	}
	for k, v := range ed.Before {
		if v == nil {
			delete(b.Properties, k)
		} else {
			b.Properties[k] = v
		}
	}
	return &b, after
}

// recipients resolves a side effect's recipients to distinct, existing,
// enabled user ids. A recipient source naming a user that does not exist
// is an error (the outcome records it).
func (e *Engine) recipients(ctx context.Context, n domain.NotificationSideEffect, actor *models.User, target *Object, params map[string]any) ([]*models.User, error) {
	var named []string
	named = append(named, n.UserIDs...)
	if n.UserIDInputName != "" {
		named = append(named, stringsOf(params[n.UserIDInputName])...)
	}
	if n.TargetUserPropertyName != "" && target != nil {
		named = append(named, stringsOf(target.Properties[n.TargetUserPropertyName])...)
	}
	if n.SendToTargetCreator && target != nil && target.CreatedBy != "" {
		named = append(named, target.CreatedBy)
	}
	var users []models.User
	// The read rule's columns too: each recipient's notification is
	// rendered with what that recipient may read.
	q := e.db.WithContext(ctx).Model(&models.User{}).Select("id", "username", "disabled", "roles", "clearance", "organization")
	if n.Broadcast {
		if err := q.Where("disabled = ?", false).Find(&users).Error; err != nil {
			return nil, fmt.Errorf("list users: %w", err)
		}
	} else if len(named) > 0 {
		if err := q.Where("id IN ? OR username IN ?", named, named).Find(&users).Error; err != nil {
			return nil, fmt.Errorf("look up recipients: %w", err)
		}
		found := map[string]bool{}
		for _, u := range users {
			found[u.ID], found[u.Username] = true, true
		}
		for _, x := range named {
			if !found[x] {
				return nil, fmt.Errorf("recipient %q is not a user", x)
			}
		}
	}
	seen := map[string]bool{}
	var out []*models.User
	add := func(u *models.User) {
		if !seen[u.ID] {
			seen[u.ID] = true
			out = append(out, u)
		}
	}
	if n.SendToActor {
		add(actor)
	}
	for i := range users {
		if !users[i].Disabled {
			add(&users[i])
		}
	}
	return out, nil
}

func stringsOf(v any) []string {
	switch x := v.(type) {
	case string:
		if x != "" {
			return []string{x}
		}
	case []any:
		var out []string
		for _, y := range x {
			if s, ok := y.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// templateScope is what {{ path }} in titles, bodies and metadata can name.
func templateScope(at *ActionType, actor *models.User, before, after *Object, params map[string]any, ex *models.Execution) map[string]any {
	obj := func(o *Object) any {
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

var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}`)

// render replaces {{ path }} with the value at path in scope; a path that
// names nothing renders empty.
func render(s string, scope map[string]any) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		path := placeholder.FindStringSubmatch(m)[1]
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

// inApp renders side effect n for one recipient.
func (e *Engine) inApp(n domain.NotificationSideEffect, scope map[string]any, ex *models.Execution, at *ActionType, userID string) models.Notification {
	meta := map[string]any{}
	for k, v := range n.Metadata {
		if s, ok := v.(string); ok {
			v = render(s, scope)
		}
		meta[k] = v
	}
	return models.Notification{
		ID: uuid.NewString(), UserID: userID, ExecutionID: ex.ID, ActionTypeID: at.ID,
		Title: render(n.Title, scope), Body: render(n.Body, scope),
		Severity: n.EffectiveSeverity(), Category: n.Category, Metadata: models.NewJSON(meta),
	}
}

// recipientScopes renders each recipient's notification with what that
// recipient may read: the target (as the operation found it) and the
// object (as it left it) are in the scope only for a recipient whose read
// rule admits them; for another they are absent and their placeholders
// render empty. So a side effect cannot carry an object's data to someone
// the object is hidden from. At most two scopes are built per execution.
type recipientScopes struct {
	e             *Engine
	at            *ActionType
	actor         *models.User
	before, after *Object
	params        map[string]any
	ex            *models.Execution
	full, bare    map[string]any
}

func (s *recipientScopes) forUser(u *models.User) map[string]any {
	readable := func(o *Object) bool { return o == nil || s.e.onto.CanRead(u, o.Marking, o.Organization) }
	if readable(s.before) && readable(s.after) {
		if s.full == nil {
			s.full = templateScope(s.at, s.actor, s.before, s.after, s.params, s.ex)
		}
		return s.full
	}
	if s.bare == nil {
		s.bare = templateScope(s.at, s.actor, nil, nil, s.params, s.ex)
	}
	return s.bare
}
