package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
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

// Notify is the notify step of workflows recorded before deliveries ran
// one step per channel: it delivers every channel of the action in turn.
func (e *Engine) Notify(ctx context.Context, p *Prepared, _ *Outcome) error {
	at, err := e.onto.ActionType(ctx, p.ActionTypeID)
	if err != nil {
		return err
	}
	chs := Channels(at)
	for i, ch := range chs {
		if err := e.Deliver(ctx, p.ExecutionID, ch, i == len(chs)-1); err != nil {
			return err
		}
	}
	return nil
}

// Channels lists the channels an action's side effects use, in order of
// first use: the delivery steps its workflow runs.
func Channels(at *ActionType) []string { return channelsOf(at.Config.NotificationSideEffects) }

// channelsOf lists the channels side effects use, in order of first use.
func channelsOf(effects []domain.NotificationSideEffect) []string {
	var out []string
	for _, n := range effects {
		for _, ch := range n.EffectiveChannels() {
			if !contains(out, ch) {
				out = append(out, ch)
			}
		}
	}
	return out
}

// Deliver is the delivery step of one channel, run after a successful
// operation only: it renders every side effect that uses the channel for
// each recipient, delivers, and records the outcomes on the execution. It
// never returns a delivery failure — the action has committed and a
// notification cannot undo it — only errors of its own bookkeeping, which
// the step retries. A channel whose outcomes are recorded is not delivered
// again. last (the workflow's word) says no step follows: the execution
// has settled.
func (e *Engine) Deliver(ctx context.Context, executionID, channel string, last bool) error {
	defer e.observe("notify", time.Now())
	if last {
		defer e.memo.drop(executionID)
		defer e.settle(executionID)
	}
	ex, at, actor, err := e.notifyInput(ctx, executionID)
	if err != nil {
		return err
	}
	if ex.NotifiedAt != nil || recordedChannel(ex, channel) || ex.Kind == models.KindWhatIf {
		// A what-if previews its notifications; none is ever delivered.
		return nil
	}
	msgs, outcomes := e.messages(ctx, ex, at, actor, channel)
	impl := e.channels[channel]
	tx, _ := impl.(TxChannel)
	if remote, ok := impl.(RemoteChannel); ok && len(msgs) > 0 {
		recs, err := deliverRemote(ctx, remote, msgs)
		if err != nil {
			return err
		}
		outcomes = tally(outcomes, msgs, recs)
	}
	recorded := false
	err = e.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		cur, err := e.execs.Lock(ctx, db, executionID)
		if err != nil {
			return err
		}
		if cur.NotifiedAt != nil || recordedChannel(cur, channel) {
			return nil
		}
		if tx != nil {
			if err := tx.DeliverTx(ctx, db, msgs); err != nil {
				return err
			}
		}
		var notifiedAt *time.Time
		if last {
			now := e.now()
			notifiedAt = &now
		}
		if err := e.execs.RecordDeliveries(ctx, db, executionID, append(cur.Notifications.V, outcomes...), notifiedAt); err != nil {
			return fmt.Errorf("record %s outcomes: %w", channel, err)
		}
		recorded = true
		return nil
	})
	if err == nil && recorded {
		e.delivered(ctx, channel, outcomes)
	}
	return err
}

// messages renders the side effects that use channel, one message per
// recipient, and their outcomes before delivery: a side effect whose
// recipients cannot be resolved is failed, one without recipients or
// without an implementation of the channel here is skipped.
func (e *Engine) messages(ctx context.Context, ex *models.Execution, at *ActionType, actor *models.User, channel string) ([]Message, []models.NotificationOutcome) {
	before, after := e.beforeAfter(ctx, ex.TargetObjectID, &Outcome{Edits: ex.Edits.V})
	if ex.Kind == models.KindRevert && ex.RevertOf != nil {
		// A revert has no parameters of its own: its templates and
		// recipients see those of the execution it reverts.
		x := *ex
		if orig, err := e.execution(ctx, e.db, *ex.RevertOf); err == nil {
			x.Parameters = orig.Parameters
		}
		ex = &x
	}
	return e.messagesFor(ctx, ex, at, actor, channel, before, after)
}

// messagesFor renders channel's side effects over the target as the
// operation found it (before) and the object as it left it (after): the
// main ontology's for a delivery, the branch's for a what-if preview.
func (e *Engine) messagesFor(ctx context.Context, ex *models.Execution, at *ActionType, actor *models.User, channel string, before, after *Object) ([]Message, []models.NotificationOutcome) {
	params := ex.Parameters.V // as Run recorded them, materialized
	scopes := &recipientScopes{e: e, at: at, actor: actor, before: before, after: after, params: params, ex: ex}
	_, have := e.channels[channel]
	var msgs []Message
	var outcomes []models.NotificationOutcome
	effects := at.Config.SideEffects(ex.Kind == models.KindRevert)
	for i := range effects {
		n := &effects[i]
		if !contains(n.EffectiveChannels(), channel) {
			continue
		}
		recipients, rerr := e.recipients(ctx, *n, actor, before, params)
		var settings map[string]*models.NotificationSettings
		if rerr == nil && len(recipients) > e.maxRecipients {
			rerr = fmt.Errorf("%d recipients, more than the %d a side effect may have (--max-recipients)", len(recipients), e.maxRecipients)
		}
		if rerr == nil {
			settings, rerr = e.notificationSettings(ctx, recipients)
		}
		accepting := accepts(recipients, settings, channel)
		o := models.NotificationOutcome{Index: i, Channel: channel, Recipients: len(accepting), Status: Delivered}
		switch {
		case rerr != nil:
			o.Status, o.Error = Failed, rerr.Error()
		case !have:
			o.Status, o.Error = Skipped, "channel "+channel+" is not available in this release"
		case len(recipients) == 0:
			o.Status, o.Error = Skipped, "no recipients"
		case len(accepting) == 0:
			o.Status, o.Error = Skipped, "no recipient accepts "+channel+" notifications (their notification settings)"
		default:
			for _, r := range accepting {
				m := e.message(n, i, scopes.forUser(r), ex, at, r)
				m.Settings = settings[r.ID]
				msgs = append(msgs, m)
			}
		}
		outcomes = append(outcomes, o)
	}
	return msgs, outcomes
}

func recordedChannel(ex *models.Execution, channel string) bool {
	for _, o := range ex.Notifications.V {
		if o.Channel == channel {
			return true
		}
	}
	return false
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
	q := e.db.WithContext(ctx).Model(&models.User{}).Select("id", "username", "disabled", "roles", "clearance", "organization", "email")
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

// message renders side effect n for one recipient.
func (e *Engine) message(n *domain.NotificationSideEffect, index int, scope map[string]any, ex *models.Execution, at *ActionType, r *models.User) Message {
	meta := map[string]any{}
	for k, v := range n.Metadata {
		if s, ok := v.(string); ok {
			v = render(s, scope)
		}
		meta[k] = v
	}
	return Message{SideEffect: index, Effect: n, Recipient: r, ExecutionID: ex.ID, ActionTypeID: at.ID, ActionVersion: at.Version,
		Title: render(n.Title, scope), Body: render(n.Body, scope), Metadata: meta}
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

// notificationSettings reads the recipients' notification settings by
// user id; users without settings are absent (they take every channel).
func (e *Engine) notificationSettings(ctx context.Context, users []*models.User) (map[string]*models.NotificationSettings, error) {
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = u.ID
	}
	var rows []models.NotificationSettings
	if len(ids) > 0 {
		if err := e.db.WithContext(ctx).Where("user_id IN ?", ids).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("read recipients' notification settings: %w", err)
		}
	}
	out := make(map[string]*models.NotificationSettings, len(rows))
	for i := range rows {
		out[rows[i].UserID] = &rows[i]
	}
	return out, nil
}

// accepts keeps the users whose settings accept channel.
func accepts(users []*models.User, settings map[string]*models.NotificationSettings, channel string) []*models.User {
	var out []*models.User
	for _, u := range users {
		if settings[u.ID].Accepts(channel) {
			out = append(out, u)
		}
	}
	return out
}
