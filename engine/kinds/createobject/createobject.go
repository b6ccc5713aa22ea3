package createobject

import (
	"context"
	"fmt"
	"github.com/ontoflow/ontoflow/engine"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// CreateObject is the create_object kind: it creates an object of the
// action's object type, owned by the actor's organization, from inputs and
// fixed values (domain.MappingConfig). It has no target.
type CreateObject struct{}

// Name implements domain.OperationKind.
func (CreateObject) Name() string { return domain.KindCreateObject }

// NeedsObjectType implements domain.OperationKind.
func (CreateObject) NeedsObjectType() bool { return true }

// HasTarget implements domain.OperationKind: never.
func (CreateObject) HasTarget(string) bool { return false }

// NewConfig implements domain.OperationKind.
func (CreateObject) NewConfig() any { return &domain.MappingConfig{} }

// CheckConfig implements domain.OperationKind.
func (CreateObject) CheckConfig(_ context.Context, s *domain.KindScope, cfg any) error {
	return s.CheckMappings(*cfg.(*domain.MappingConfig), true)
}

// References implements domain.OperationKind.
func (CreateObject) References(cfg any) domain.References {
	return engine.MappingRefs(cfg.(*domain.MappingConfig))
}

// Preview implements Kind.
func (CreateObject) Preview(_ context.Context, op *engine.Op) ([]models.Edit, error) {
	return []models.Edit{{Op: models.EditCreateObject, ObjectTypeID: op.Action.ObjectTypeID,
		After: op.Config.(*domain.MappingConfig).Properties(op.Params)}}, nil
}

// Apply implements Kind.
func (CreateObject) Apply(ctx context.Context, op *engine.Op) (*engine.Outcome, error) {
	props := op.Config.(*domain.MappingConfig).Properties(op.Params)
	obj, err := op.Ontology.In(op.Tx).CreateObject(ctx, op.Action.ObjectTypeID, props, "", op.Actor.ID, op.Actor.Organization)
	if err != nil {
		return nil, err
	}
	return &engine.Outcome{
		Edits: []models.Edit{{Op: models.EditCreateObject, ObjectTypeID: obj.ObjectTypeID, ObjectID: obj.ID, After: obj.Properties,
			Marking: obj.Marking, Organization: obj.Organization, CreatedBy: obj.CreatedBy,
			CreatedAt: engine.TimePtr(obj.CreatedAt), UpdatedAtAfter: engine.TimePtr(obj.UpdatedAt)}},
		Result: map[string]any{"object_id": obj.ID},
	}, nil
}

// Invert implements Kind: delete the object, expecting it as the edit left
// it.
func (CreateObject) Invert(ed models.Edit) ([]models.Edit, error) {
	if ed.Op != models.EditCreateObject {
		return nil, fmt.Errorf("create_object cannot invert a %s edit", ed.Op)
	}
	return ed.Inverse()
}
