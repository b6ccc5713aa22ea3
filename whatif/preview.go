package whatif

import (
	"context"
	"reflect"
	"sort"

	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// Object is an object as a what-if shows it.
type Object struct {
	ID           string         `json:"id"`
	ObjectTypeID string         `json:"object_type_id"`
	Properties   map[string]any `json:"properties"`
	Marking      string         `json:"marking"`
	Organization string         `json:"organization,omitempty"`
	CreatedBy    string         `json:"created_by,omitempty"`
}

// PropertyDiff is one property whose value differs.
type PropertyDiff struct {
	Property string `json:"property"`
	Before   any    `json:"before"`
	After    any    `json:"after"`
}

// ObjectChange is one touched object: its state before and after (nil:
// absent), and the properties that differ, for a UI to render.
type ObjectChange struct {
	ObjectID     string         `json:"object_id"`
	ObjectTypeID string         `json:"object_type_id"`
	Change       string         `json:"change"` // created, updated, deleted
	Before       *Object        `json:"before"`
	After        *Object        `json:"after"`
	Diff         []PropertyDiff `json:"diff"`
}

// LinkChange is a link created or deleted.
type LinkChange struct {
	Change     string `json:"change"` // created, deleted
	LinkID     string `json:"link_id"`
	LinkTypeID string `json:"link_type_id"`
	SourceID   string `json:"source_object_id"`
	TargetID   string `json:"target_object_id"`
}

// NotificationPreview is one notification a what-if would send.
type NotificationPreview struct {
	Channel    string         `json:"channel"`
	SideEffect int            `json:"side_effect"`
	Recipient  string         `json:"recipient_id"`
	Username   string         `json:"recipient"`
	Title      string         `json:"title"`
	Body       string         `json:"body"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Object changes.
const (
	Created = "created"
	Updated = "updated"
	Deleted = "deleted"
)

// Touched lists the objects edits changed, in order of first mention
// (the what-if preview's objects, and a branch's diff).
func Touched(edits []models.Edit) []string {
	var ids []string
	seen := map[string]bool{}
	for _, ed := range edits {
		if ed.ObjectID != "" && !seen[ed.ObjectID] {
			seen[ed.ObjectID] = true
			ids = append(ids, ed.ObjectID)
		}
	}
	return ids
}

// preview is what the user sees of a what-if: the touched objects
// before and after (the read rule applied: an object the actor may not
// read shows its id only), links, the notifications and the effect.
func (b *Branches) preview(ctx context.Context, run *engine.BranchRun, sim *simulation) map[string]any {
	canRead := func(marking, org string) bool { return b.onto.CanRead(run.Actor, marking, org) }
	objects := []ObjectChange{}
	for _, id := range Touched(sim.edits) {
		objects = append(objects, ChangeOf(canRead, id, sim.before[id], sim.after[id]))
	}
	notes, outcomes := previewNotifications(ctx, run, sim)
	p := map[string]any{"objects": objects, "links": LinkChanges(sim.edits), "notifications": notes,
		"notification_outcomes": outcomes}
	if len(sim.result) > 0 {
		p["operation_result"] = sim.result
	}
	if len(sim.effect) > 0 && string(sim.effect) != "null" {
		p["effect"] = sim.effect
	}
	return p
}

// ChangeOf describes object id before and after a change (nil: absent);
// an object canRead refuses (before or after) shows its id and type only.
func ChangeOf(canRead func(marking, organization string) bool, id string, before, after *engine.Object) ObjectChange {
	c := ObjectChange{ObjectID: id, Change: Updated, Diff: []PropertyDiff{}}
	switch {
	case before == nil:
		c.Change = Created
	case after == nil:
		c.Change = Deleted
	}
	for _, o := range []*engine.Object{before, after} {
		if o == nil {
			continue
		}
		c.ObjectTypeID = o.ObjectTypeID
		if !canRead(o.Marking, o.Organization) {
			return c
		}
	}
	c.Before, c.After = view(before), view(after)
	c.Diff = diffProps(props(before), props(after))
	return c
}

func view(o *engine.Object) *Object {
	if o == nil {
		return nil
	}
	return &Object{ID: o.ID, ObjectTypeID: o.ObjectTypeID, Properties: o.Properties, Marking: o.Marking,
		Organization: o.Organization, CreatedBy: o.CreatedBy}
}

func props(o *engine.Object) map[string]any {
	if o == nil {
		return nil
	}
	return o.Properties
}

// diffProps lists the properties whose values differ, by name.
func diffProps(before, after map[string]any) []PropertyDiff {
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	out := []PropertyDiff{}
	for k := range keys {
		if !reflect.DeepEqual(before[k], after[k]) {
			out = append(out, PropertyDiff{Property: k, Before: before[k], After: after[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Property < out[j].Property })
	return out
}

// LinkChanges lists the links edits created and deleted (with a deleted
// object, or by an inverse).
func LinkChanges(edits []models.Edit) []LinkChange {
	out := []LinkChange{}
	for _, ed := range edits {
		switch ed.Op {
		case models.EditCreateLink, models.EditDeleteLink:
			ch := Created
			if ed.Op == models.EditDeleteLink {
				ch = Deleted
			}
			out = append(out, LinkChange{Change: ch, LinkID: ed.LinkID, LinkTypeID: ed.LinkTypeID, SourceID: ed.SourceID, TargetID: ed.TargetID})
		case models.EditDeleteObject:
			for _, l := range ed.Links {
				out = append(out, LinkChange{Change: Deleted, LinkID: l.ID, LinkTypeID: l.LinkTypeID, SourceID: l.SourceID, TargetID: l.TargetID})
			}
		}
	}
	return out
}

// previewNotifications renders every channel's notifications as a
// delivery would — per recipient, with that recipient's read rule — over
// the branch's before and after, without delivering any.
func previewNotifications(ctx context.Context, run *engine.BranchRun, sim *simulation) ([]NotificationPreview, []models.NotificationOutcome) {
	notes := []NotificationPreview{}
	var outcomes []models.NotificationOutcome
	if len(run.Action.Config.NotificationSideEffects) == 0 {
		return notes, outcomes
	}
	var before, after *engine.Object
	if run.Target != nil {
		before = sim.before[run.Target.ID]
	}
	if ids := Touched(sim.edits); len(ids) > 0 {
		after = sim.after[ids[0]]
	}
	for _, ch := range engine.Channels(run.Action) {
		msgs, outs := run.Messages(ctx, ch, before, after)
		for _, m := range msgs {
			notes = append(notes, NotificationPreview{Channel: ch, SideEffect: m.SideEffect, Recipient: m.Recipient.ID,
				Username: m.Recipient.Username, Title: m.Title, Body: m.Body, Metadata: m.Metadata})
		}
		for _, o := range outs {
			if o.Status == engine.Delivered {
				o.Status = "previewed"
			}
			outcomes = append(outcomes, o)
		}
	}
	return notes, outcomes
}
