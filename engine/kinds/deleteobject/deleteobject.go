package deleteobject

import (
	"context"
	"fmt"
	"github.com/ontoflow/ontoflow/engine"

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
func (DeleteObject) CheckConfig(context.Context, *domain.KindScope, any) error { return nil }

// References implements domain.OperationKind.
func (DeleteObject) References(any) domain.References { return domain.References{} }

// Preview implements Kind.
func (DeleteObject) Preview(_ context.Context, op *engine.Op) ([]models.Edit, error) {
	return []models.Edit{{Op: models.EditDeleteObject, ObjectTypeID: op.Target.ObjectTypeID, ObjectID: op.Target.ID,
		Before: op.Target.Properties}}, nil
}

// Apply implements Kind.
func (DeleteObject) Apply(ctx context.Context, op *engine.Op) (*engine.Outcome, error) {
	ed, err := engine.DeleteObject(ctx, op.Ontology, op.Tx, op.Target.ID)
	if err != nil {
		return nil, err
	}
	return &engine.Outcome{Edits: []models.Edit{ed}, Result: map[string]any{"object_id": ed.ObjectID}}, nil
}

// Invert implements Kind: the object recreated with its id, properties,
// marking, organization, creator and creation time, then each link
// removed with it (same id, ends, properties, creator and time).
func (DeleteObject) Invert(ed models.Edit) ([]models.Edit, error) {
	if ed.Op != models.EditDeleteObject {
		return nil, fmt.Errorf("delete_object cannot invert a %s edit", ed.Op)
	}
	return ed.Inverse()
}
