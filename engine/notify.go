package engine

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications/delivery"
	"github.com/ontoflow/ontoflow/notifications/recipients"
	rendering "github.com/ontoflow/ontoflow/notifications/render"
)

// Notification outcome statuses (package delivery's), named here for the
// engine's readers of recorded outcomes (what-if, revert, metrics).
const (
	Delivered = delivery.Delivered
	Failed    = delivery.Failed
	Skipped   = delivery.Skipped
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
		recs, err := delivery.Remote(ctx, remote, msgs, Attempt(ctx))
		if err != nil {
			return err
		}
		outcomes = delivery.Tally(outcomes, msgs, recs)
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
			if err := tx.DeliverTx(ctx, models.InTx(db), msgs); err != nil {
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
func (e *Engine) messages(ctx context.Context, ex *models.Execution, at *ActionType, actor *models.User, channel string) ([]delivery.Message, []models.NotificationOutcome) {
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
func (e *Engine) messagesFor(ctx context.Context, ex *models.Execution, at *ActionType, actor *models.User, channel string, before, after *Object) ([]delivery.Message, []models.NotificationOutcome) {
	params := ex.Parameters.V // as Run recorded them, materialized
	scopes := &rendering.Scopes{CanRead: e.onto.CanRead, At: at, Actor: actor, Before: before, After: after, Params: params, Ex: ex}
	_, have := e.channels[channel]
	var msgs []delivery.Message
	var outcomes []models.NotificationOutcome
	effects := at.Config.SideEffects(ex.Kind == models.KindRevert)
	for i := range effects {
		n := &effects[i]
		if !contains(n.EffectiveChannels(), channel) {
			continue
		}
		users, rerr := recipients.Resolve(ctx, e.db, *n, actor, before, params)
		var settings map[string]*models.NotificationSettings
		if rerr == nil && len(users) > e.maxRecipients {
			rerr = fmt.Errorf("%d recipients, more than the %d a side effect may have (--max-recipients)", len(users), e.maxRecipients)
		}
		if rerr == nil {
			settings, rerr = recipients.Settings(ctx, e.db, users)
		}
		accepting := recipients.Accepting(users, settings, channel)
		o := models.NotificationOutcome{Index: i, Channel: channel, Recipients: len(accepting), Status: Delivered}
		switch {
		case rerr != nil:
			o.Status, o.Error = Failed, rerr.Error()
		case !have:
			o.Status, o.Error = Skipped, "channel "+channel+" is not available in this release"
		case len(users) == 0:
			o.Status, o.Error = Skipped, "no recipients"
		case len(accepting) == 0:
			o.Status, o.Error = Skipped, "no recipient accepts "+channel+" notifications (their notification settings)"
		default:
			for _, r := range accepting {
				m := rendering.Message(n, i, scopes.For(r), ex, at, r)
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
		after, _ = e.onto.In(models.Tx{}).Object(ctx, ed.ObjectID)
	}
	if targetID == "" {
		return nil, after
	}
	var cur *Object
	if ed.ObjectID == targetID {
		cur = after
	} else {
		cur, _ = e.onto.In(models.Tx{}).Object(ctx, targetID)
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

// The webhook kind's templates are the notifications' (package render):
// render fills a {{ path }}, placeholder finds one.
var placeholder = rendering.Placeholder

func render(s string, scope map[string]any) string { return rendering.Text(s, scope) }
