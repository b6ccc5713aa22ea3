package updateobject

import (
	"context"
	"fmt"
	"github.com/ontoflow/ontoflow/engine"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// UpdateObject is the update_object kind: it sets properties of the
// target from inputs and fixed values (domain.MappingConfig).
type UpdateObject struct{}

// Name implements domain.OperationKind.
func (UpdateObject) Name() string { return domain.KindUpdateObject }

// NeedsObjectType implements domain.OperationKind.
func (UpdateObject) NeedsObjectType() bool { return true }

// HasTarget implements domain.OperationKind: always.
func (UpdateObject) HasTarget(string) bool { return true }

// NewConfig implements domain.OperationKind.
func (UpdateObject) NewConfig() any { return &domain.MappingConfig{} }

// CheckConfig implements domain.OperationKind.
func (UpdateObject) CheckConfig(_ context.Context, s *domain.KindScope, cfg any) error {
	return s.CheckMappings(*cfg.(*domain.MappingConfig), false)
}

// References implements domain.OperationKind.
func (UpdateObject) References(cfg any) domain.References {
	return engine.MappingRefs(cfg.(*domain.MappingConfig))
}

// Preview implements Kind.
func (UpdateObject) Preview(_ context.Context, op *engine.Op) ([]models.Edit, error) {
	patch := op.Config.(*domain.MappingConfig).Properties(op.Params)
	return []models.Edit{{Op: models.EditUpdateObject, ObjectTypeID: op.Target.ObjectTypeID, ObjectID: op.Target.ID,
		Before: engine.Pick(op.Target.Properties, patch), After: patch}}, nil
}

// Apply implements Kind.
func (UpdateObject) Apply(ctx context.Context, op *engine.Op) (*engine.Outcome, error) {
	patch := op.Config.(*domain.MappingConfig).Properties(op.Params)
	after, err := op.Ontology.In(op.Tx).UpdateObject(ctx, op.Target.ID, patch)
	if err != nil {
		return nil, err
	}
	return &engine.Outcome{
		Edits: []models.Edit{{Op: models.EditUpdateObject, ObjectTypeID: after.ObjectTypeID, ObjectID: after.ID,
			Before: engine.Pick(op.Target.Properties, patch), After: engine.Pick(after.Properties, patch),
			UpdatedAtBefore: engine.TimePtr(op.Target.UpdatedAt), UpdatedAtAfter: engine.TimePtr(after.UpdatedAt)}},
		Result: map[string]any{"object_id": after.ID},
	}, nil
}

// Invert implements Kind: the before values of the touched properties,
// expecting the object as the edit left it.
func (UpdateObject) Invert(ed models.Edit) ([]models.Edit, error) {
	if ed.Op != models.EditUpdateObject {
		return nil, fmt.Errorf("update_object cannot invert a %s edit", ed.Op)
	}
	return ed.Inverse()
}
