package engine

import (
	"context"
	"fmt"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// DeleteObject is the delete_object kind: it deletes the target and its
// links. Its edit keeps the whole object and every link removed with it,
// so that it can be recreated exactly, with the same ids.
type DeleteObject struct{}

// deleteObjectConfig is empty: delete_object takes no configuration.
type deleteObjectConfig struct{}

// Name implements domain.OperationKind.
func (DeleteObject) Name() string { return domain.KindDeleteObject }

// NeedsObjectType implements domain.OperationKind.
func (DeleteObject) NeedsObjectType() bool { return true }

// HasTarget implements domain.OperationKind: always.
func (DeleteObject) HasTarget(string) bool { return true }

// NewConfig implements domain.OperationKind.
func (DeleteObject) NewConfig() any { return &deleteObjectConfig{} }

// CheckConfig implements domain.OperationKind.
func (DeleteObject) CheckConfig(*domain.KindScope, any) error { return nil }

// References implements domain.OperationKind.
func (DeleteObject) References(any) domain.References { return domain.References{} }

// Preview implements Kind.
func (DeleteObject) Preview(_ context.Context, op *Op) ([]models.Edit, error) {
	return []models.Edit{{Op: models.EditDeleteObject, ObjectTypeID: op.Target.ObjectTypeID, ObjectID: op.Target.ID,
		Before: op.Target.Properties}}, nil
}

// Apply implements Kind.
func (DeleteObject) Apply(ctx context.Context, op *Op) (*Outcome, error) {
	obj, links, err := op.Ontology.DeleteObject(ctx, op.Tx, op.Target.ID)
	if err != nil {
		return nil, err
	}
	ed := models.Edit{Op: models.EditDeleteObject, ObjectTypeID: obj.ObjectTypeID, ObjectID: obj.ID, Before: obj.Properties,
		Marking: obj.Marking, Organization: obj.Organization, CreatedBy: obj.CreatedBy,
		CreatedAt: timePtr(obj.CreatedAt), UpdatedAtBefore: timePtr(obj.UpdatedAt)}
	for _, l := range links {
		ed.Links = append(ed.Links, models.EditLink{ID: l.ID, LinkTypeID: l.LinkTypeID, SourceID: l.SourceID, TargetID: l.TargetID,
			Properties: l.Properties, CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt})
	}
	return &Outcome{Edits: []models.Edit{ed}, Result: map[string]any{"object_id": obj.ID}}, nil
}

// Invert implements Kind: the object recreated with its id, properties,
// marking, organization, creator and creation time, then each link
// removed with it (same id, ends, properties, creator and time).
func (DeleteObject) Invert(ed models.Edit) ([]models.Edit, error) {
	if ed.Op != models.EditDeleteObject || ed.ObjectID == "" || ed.Marking == "" {
		return nil, fmt.Errorf("delete_object cannot invert this %s edit: it does not record the whole object (recorded before edits kept it)", ed.Op)
	}
	out := []models.Edit{{Op: models.EditCreateObject, ObjectTypeID: ed.ObjectTypeID, ObjectID: ed.ObjectID, After: ed.Before,
		Marking: ed.Marking, Organization: ed.Organization, CreatedBy: ed.CreatedBy, CreatedAt: ed.CreatedAt,
		UpdatedAtAfter: ed.UpdatedAtBefore}}
	for _, l := range ed.Links {
		at := l.CreatedAt
		out = append(out, models.Edit{Op: models.EditCreateLink, LinkTypeID: l.LinkTypeID, LinkID: l.ID,
			SourceID: l.SourceID, TargetID: l.TargetID, After: l.Properties, CreatedBy: l.CreatedBy, CreatedAt: &at})
	}
	return out, nil
}
