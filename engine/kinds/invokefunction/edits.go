package invokefunction

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/functions/runtime"
	"github.com/ontoflow/ontoflow/models"
)

// functionEditsMax bounds the edits one run may return.
const functionEditsMax = 1000

// Edit types a function returns (docs/functions.md); OpenFoundry's names
// are accepted as aliases.
const (
	FnEditUpdate = "update"
	FnEditCreate = "create"
	FnEditDelete = "delete"
	FnEditLink   = "link"
	FnEditUnlink = "unlink"
)

var fnEditAliases = map[string]string{
	"object_patch": FnEditUpdate, "update_object": FnEditUpdate, "create_object": FnEditCreate,
	"delete_object": FnEditDelete, "create_link": FnEditLink, "delete_link": FnEditUnlink,
}

// FunctionEdit is one edit a function returned, normalized.
type FunctionEdit struct {
	Type       string         `json:"type"`
	ObjectID   string         `json:"object_id,omitempty"`
	ObjectType string         `json:"object_type,omitempty"`
	Properties map[string]any `json:"properties,omitempty"`
	Marking    string         `json:"marking,omitempty"`
	LinkType   string         `json:"link_type,omitempty"`
	Source     string         `json:"source,omitempty"`
	Target     string         `json:"target,omitempty"`
	// Field names the member of the return value the edit came from when
	// it is not edits[i] (object_patch, link, delete_object).
	Field string `json:"field,omitempty"`
}

// rawEdit accepts the names both shapes use.
type rawEdit struct {
	Type           string         `json:"type"`
	Op             string         `json:"op"`
	ObjectID       string         `json:"object_id"`
	ID             string         `json:"id"`
	ObjectType     string         `json:"object_type"`
	ObjectTypeID   string         `json:"object_type_id"`
	Properties     map[string]any `json:"properties"`
	Patch          map[string]any `json:"patch"`
	Marking        string         `json:"marking"`
	LinkType       string         `json:"link_type"`
	LinkTypeID     string         `json:"link_type_id"`
	Source         string         `json:"source"`
	SourceID       string         `json:"source_object_id"`
	Target         string         `json:"target"`
	TargetObjectID string         `json:"target_object_id"`
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// normalize checks one edit's shape.
func (r rawEdit) normalize(i int) (FunctionEdit, *apperr.Error) {
	t := firstOf(r.Type, r.Op)
	if a, ok := fnEditAliases[t]; ok {
		t = a
	}
	e := FunctionEdit{Type: t, ObjectID: firstOf(r.ObjectID, r.ID), ObjectType: firstOf(r.ObjectType, r.ObjectTypeID),
		Properties: r.Properties, Marking: r.Marking, LinkType: firstOf(r.LinkType, r.LinkTypeID),
		Source: firstOf(r.Source, r.SourceID), Target: firstOf(r.Target, r.TargetObjectID)}
	if e.Properties == nil {
		e.Properties = r.Patch
	}
	missing := ""
	switch t {
	case FnEditUpdate:
		missing = map[bool]string{true: "object_id and properties"}[e.ObjectID == "" || len(e.Properties) == 0]
	case FnEditCreate:
		missing = map[bool]string{true: "object_type"}[e.ObjectType == ""]
	case FnEditDelete:
		missing = map[bool]string{true: "object_id"}[e.ObjectID == ""]
	case FnEditLink, FnEditUnlink:
		missing = map[bool]string{true: "link_type, source and target"}[e.LinkType == "" || e.Source == "" || e.Target == ""]
	case "":
		return e, resultInvalid(fmt.Sprintf("edits[%d]", i), "type", "an edit needs a type (update, create, delete, link, unlink)")
	default:
		return e, resultInvalid(fmt.Sprintf("edits[%d]", i), "type", fmt.Sprintf("unknown edit type %q (update, create, delete, link, unlink)", clipText(t)))
	}
	if missing != "" {
		return e, editRefused(i, e, "shape", "a %s edit needs %s", t, missing)
	}
	return e, nil
}

// editRefused is the typed refusal of edit i.
func editRefused(i int, e FunctionEdit, reason, format string, args ...any) *apperr.Error {
	msg := fmt.Sprintf(format, args...)
	field, what := e.Field, e.Field+" edit"
	if field == "" {
		field, what = fmt.Sprintf("edits[%d]", i), fmt.Sprintf("edit %d", i)
	}
	return apperr.New(apperr.FunctionEditRefused, "the function's %s (%s %s) was refused: %s", what, e.Type, e.subject(), msg).
		WithDetails(apperr.Detail{Field: field, Reason: reason, Message: msg})
}

// resultInvalid refuses a return value whose member field is not in a
// shape the engine knows.
func resultInvalid(field, reason, msg string) *apperr.Error {
	return apperr.New(apperr.FunctionResultInvalid, "the function's return value is invalid: %s: %s", field, msg).
		WithDetails(apperr.Detail{Field: field, Reason: reason, Message: msg})
}

// clipText shortens a value the function chose for an error message.
func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func (e FunctionEdit) subject() string {
	switch e.Type {
	case FnEditCreate:
		return e.ObjectType
	case FnEditLink, FnEditUnlink:
		return e.LinkType + " " + e.Source + "->" + e.Target
	}
	return e.ObjectID
}

// returnMembers are the members a return value may have: edits and
// result, and OpenFoundry's top-level form (output for result;
// object_patch, link and delete_object as edits of the target).
var returnMembers = []string{"edits", "result", "output", "object_patch", "link", "delete_object"}

// parseReturn reads a function's return value strictly: an object of
// returnMembers, each in its shape; anything else is FunctionResultInvalid
// naming the member. OpenFoundry's members of the target (targetID) become
// edits around edits: object_patch and link before them, delete_object
// after them.
func parseReturn(v json.RawMessage, targetID string) ([]FunctionEdit, json.RawMessage, error) {
	var ret map[string]json.RawMessage
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &ret) != nil {
		return nil, nil, resultInvalid("return", "type", "a function returns an object: {edits: [...], result: ...}")
	}
	for k := range ret {
		if !slices.Contains(returnMembers, k) {
			return nil, nil, resultInvalid(clipText(k), "unknown_member", fmt.Sprintf("unknown member %q (expected %s)", clipText(k), strings.Join(returnMembers, ", ")))
		}
	}
	if ret["result"] != nil && ret["output"] != nil {
		return nil, nil, resultInvalid("output", "duplicate", "result and output are the same member: return one")
	}
	result := ret["result"]
	if result == nil {
		result = ret["output"]
	}
	var rawEdits []json.RawMessage
	if e, ok := ret["edits"]; ok && !isNull(e) {
		if err := json.Unmarshal(e, &rawEdits); err != nil {
			return nil, nil, resultInvalid("edits", "type", "edits is an array of edit objects")
		}
	}
	if len(rawEdits) > functionEditsMax {
		return nil, nil, apperr.New(apperr.FunctionEditRefused, "the function returned %d edits, at most %d", len(rawEdits), functionEditsMax)
	}
	before, after, err := targetSugar(ret, targetID)
	if err != nil {
		return nil, nil, err
	}
	edits := append(make([]FunctionEdit, 0, len(rawEdits)+len(before)+len(after)), before...)
	for i, raw := range rawEdits {
		var r rawEdit
		if err := decodeNumbers(raw, &r); err != nil {
			return nil, nil, resultInvalid(fmt.Sprintf("edits[%d]", i), "type", "an edit is an object")
		}
		e, rerr := r.normalize(i)
		if rerr != nil {
			return nil, nil, rerr
		}
		edits = append(edits, e)
	}
	return append(edits, after...), result, nil
}

// targetSugar reads OpenFoundry's top-level members about the target:
// object_patch (a patch of it) and link (a link from it) come before the
// edits, delete_object: true (its deletion) after them.
func targetSugar(ret map[string]json.RawMessage, targetID string) (before, after []FunctionEdit, err error) {
	needTarget := func(member string) error {
		if targetID == "" {
			return resultInvalid(member, "no_target", member+" edits the target, and this action has none")
		}
		return nil
	}
	if raw, ok := ret["object_patch"]; ok {
		var patch map[string]any
		if decodeNumbers(raw, &patch) != nil || len(patch) == 0 {
			return nil, nil, resultInvalid("object_patch", "type", "object_patch is a non-empty object of the target's properties")
		}
		if err := needTarget("object_patch"); err != nil {
			return nil, nil, err
		}
		before = append(before, FunctionEdit{Type: FnEditUpdate, ObjectID: targetID, Properties: patch, Field: "object_patch"})
	}
	if raw, ok := ret["link"]; ok {
		var r rawEdit
		if decodeNumbers(raw, &r) != nil {
			return nil, nil, resultInvalid("link", "type", "link is an object: {link_type, target}")
		}
		if err := needTarget("link"); err != nil {
			return nil, nil, err
		}
		e := FunctionEdit{Type: FnEditLink, LinkType: firstOf(r.LinkType, r.LinkTypeID), Source: targetID,
			Target: firstOf(r.Target, r.TargetObjectID), Field: "link"}
		if e.LinkType == "" || e.Target == "" {
			return nil, nil, resultInvalid("link", "shape", "link needs link_type and target (the other object's id)")
		}
		before = append(before, e)
	}
	if raw, ok := ret["delete_object"]; ok {
		var del bool
		if json.Unmarshal(raw, &del) != nil {
			return nil, nil, resultInvalid("delete_object", "type", "delete_object is true or false")
		}
		if del {
			if err := needTarget("delete_object"); err != nil {
				return nil, nil, err
			}
			after = append(after, FunctionEdit{Type: FnEditDelete, ObjectID: targetID, Field: "delete_object"})
		}
	}
	return before, after, nil
}

func decodeNumbers(raw json.RawMessage, into any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(into)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// applyFunctionEdits applies edits in op.Tx, each through the store's
// write path (type-checked as every write is) and with the actor's read
// rule, and returns them as recorded edits. The first refusal names its
// edit and, since it fails the transaction, nothing is applied.
func applyFunctionEdits(ctx context.Context, op *engine.Op, edits []FunctionEdit) ([]models.Edit, error) {
	out := make([]models.Edit, 0, len(edits))
	// The first edit may use the target as the run step has just read it
	// in the transaction; later ones read again (an earlier edit may have
	// changed it).
	sub := *op
	for i, e := range edits {
		ed, err := applyFunctionEdit(ctx, &sub, e)
		if err != nil {
			return nil, wrapEditErr(i, e, err)
		}
		out = append(out, ed)
		sub.Target = nil
	}
	return out, nil
}

// wrapEditErr names edit i in a typed refusal; other errors (the
// database) are wrapped as they are.
func wrapEditErr(i int, e FunctionEdit, err error) error {
	ae, ok := apperr.As(err)
	if !ok {
		return fmt.Errorf("apply the function's edit %d (%s %s): %w", i, e.Type, e.subject(), err)
	}
	if ae.Code == apperr.FunctionEditRefused {
		return err
	}
	return editRefused(i, e, string(ae.Code), "%s", ae.Message).WithDetails(ae.Details...)
}

func applyFunctionEdit(ctx context.Context, op *engine.Op, e FunctionEdit) (models.Edit, error) {
	switch e.Type {
	case FnEditUpdate:
		return fnUpdate(ctx, op, e)
	case FnEditCreate:
		return fnCreate(ctx, op, e)
	case FnEditDelete:
		if _, err := readableIn(ctx, op, e.ObjectID); err != nil {
			return models.Edit{}, err
		}
		return engine.DeleteObject(ctx, op.Ontology, op.Tx, e.ObjectID)
	case FnEditLink:
		return fnLink(ctx, op, e)
	case FnEditUnlink:
		return fnUnlink(ctx, op, e)
	}
	return models.Edit{}, fmt.Errorf("unknown edit type %q", e.Type)
}

// readableIn reads id in op.Tx (the target as the run step has just read
// it there: every read here extends the write lock's hold on SQLite); one
// the actor may not read is absent.
func readableIn(ctx context.Context, op *engine.Op, id string) (*engine.Object, error) {
	o := op.Target
	if o == nil || o.ID != id {
		var err error
		if o, err = op.Ontology.In(op.Tx).Object(ctx, id); err != nil {
			return nil, fmt.Errorf("read object %s: %w", id, err)
		}
	}
	if o == nil || !op.Ontology.CanRead(op.Actor, o.Marking, o.Organization) {
		return nil, apperr.New(apperr.ObjectNotFound, "object %q not found", id)
	}
	return o, nil
}

// fnUpdate applies an update as update_object does (its edit record).
func fnUpdate(ctx context.Context, op *engine.Op, e FunctionEdit) (models.Edit, error) {
	o, err := readableIn(ctx, op, e.ObjectID)
	if err != nil {
		return models.Edit{}, err
	}
	// For the actor: a reference value it may not read is refused as a
	// missing id, as REST and the built-in kinds' checkEnv refuse it.
	after, err := op.Ontology.In(op.Tx).UpdateObjectFor(ctx, op.Actor, o.ID, e.Properties)
	if err != nil {
		return models.Edit{}, err
	}
	return models.Edit{Op: models.EditUpdateObject, ObjectTypeID: after.ObjectTypeID, ObjectID: after.ID,
		Before: engine.Pick(o.Properties, e.Properties), After: engine.Pick(after.Properties, e.Properties),
		UpdatedAtBefore: engine.TimePtr(o.UpdatedAt), UpdatedAtAfter: engine.TimePtr(after.UpdatedAt)}, nil
}

// fnCreate creates an object owned by the actor's organization; one the
// actor could not read (a marking above its clearance) is refused.
func fnCreate(ctx context.Context, op *engine.Op, e FunctionEdit) (models.Edit, error) {
	obj, err := op.Ontology.In(op.Tx).CreateObjectFor(ctx, op.Actor, e.ObjectType, e.Properties, e.Marking, op.Actor.ID, op.Actor.Organization)
	if err != nil {
		return models.Edit{}, err
	}
	if !op.Ontology.CanRead(op.Actor, obj.Marking, obj.Organization) {
		return models.Edit{}, apperr.New(apperr.PermissionDenied, "the actor may not create an object marked %s", obj.Marking)
	}
	return models.Edit{Op: models.EditCreateObject, ObjectTypeID: obj.ObjectTypeID, ObjectID: obj.ID, After: obj.Properties,
		Marking: obj.Marking, Organization: obj.Organization, CreatedBy: obj.CreatedBy,
		CreatedAt: engine.TimePtr(obj.CreatedAt), UpdatedAtAfter: engine.TimePtr(obj.UpdatedAt)}, nil
}

// fnLink links two objects the actor may read (cardinality enforced by
// the store).
func fnLink(ctx context.Context, op *engine.Op, e FunctionEdit) (models.Edit, error) {
	for _, id := range []string{e.Source, e.Target} {
		if _, err := readableIn(ctx, op, id); err != nil {
			return models.Edit{}, err
		}
	}
	id, err := op.Ontology.In(op.Tx).CreateLink(ctx, e.LinkType, e.Source, e.Target)
	if err != nil {
		return models.Edit{}, err
	}
	l, err := op.Ontology.In(op.Tx).Link(ctx, id)
	if err == nil && l == nil {
		err = errors.New("not found")
	}
	if err != nil {
		return models.Edit{}, fmt.Errorf("read link %s back: %w", id, err)
	}
	return models.Edit{Op: models.EditCreateLink, LinkTypeID: l.LinkTypeID, LinkID: id, SourceID: e.Source, TargetID: e.Target}, nil
}

// fnUnlink deletes the link of a type between two objects the actor may
// read, recording what recreating it needs.
func fnUnlink(ctx context.Context, op *engine.Op, e FunctionEdit) (models.Edit, error) {
	for _, id := range []string{e.Source, e.Target} {
		if _, err := readableIn(ctx, op, id); err != nil {
			return models.Edit{}, err
		}
	}
	l, err := op.Ontology.In(op.Tx).LinkBetween(ctx, e.LinkType, e.Source, e.Target)
	if err != nil {
		return models.Edit{}, fmt.Errorf("find the link to delete: %w", err)
	}
	if l == nil {
		return models.Edit{}, apperr.New(apperr.LinkNotFound, "no %s link from %s to %s", e.LinkType, e.Source, e.Target)
	}
	if err := op.Ontology.In(op.Tx).DeleteLink(ctx, l.ID); err != nil {
		return models.Edit{}, err
	}
	at := l.CreatedAt
	return models.Edit{Op: models.EditDeleteLink, LinkTypeID: l.LinkTypeID, LinkID: l.ID, SourceID: l.SourceID, TargetID: l.TargetID,
		Before: l.Properties, CreatedBy: l.CreatedBy, CreatedAt: &at}, nil
}

func asFailure(err error, f **runtime.Failure) bool { return errors.As(err, f) }

// withConsole adds the run's console output to a refused return value, so
// the author sees what the function logged beside why it was refused.
func withConsole(err error, console string) error {
	if ae, ok := apperr.As(err); ok && ae.Data == nil {
		return ae.WithData(map[string]any{"console": console})
	}
	return err
}
