package executions

import (
	"context"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// InlineEdit is an edit of one property in place.
type InlineEdit struct {
	Actor                             *models.User
	Guest                             bool
	ObjectTypeRef, ObjectID, Property string
	Value                             any
	Justification, IdempotencyKey     string
}

// InlineEditRequest turns an inline edit into the execution request of the
// property's configured update_object action: the new value, the action's
// other mapped inputs prefilled from the object's current values. The
// object is read with the actor's read rule first (one the actor may not
// read is answered as missing). The Idempotency-Key stands for the client's
// own request, since the prefilled inputs change with the object.
func (s *Service) InlineEditRequest(ctx context.Context, e InlineEdit) (*Request, error) {
	prop, err := s.store.Property(ctx, e.ObjectTypeRef, e.Property)
	if err != nil {
		return nil, err
	}
	cfg := prop.InlineEdit.V
	if cfg == nil {
		return nil, apperr.New(apperr.InlineEditNotAllowed, "property %q has no inline_edit_config", prop.Name)
	}
	obj, err := s.store.GetObject(ctx, e.Actor, e.ObjectTypeRef, e.ObjectID)
	if err != nil {
		return nil, err
	}
	at, err := s.store.ActionType(ctx, cfg.ActionTypeID)
	if err != nil {
		return nil, err
	}
	input, err := domain.ValidateInlineEdit(prop.ObjectTypeID, domain.PropertyInfo{Name: prop.Name, Type: prop.Type.V, Required: prop.Required, Unique: prop.Unique},
		*cfg, at.ActionDefinition)
	if err != nil {
		return nil, domain.Retag(err, apperr.InvalidDefinition, apperr.InlineEditNotAllowed)
	}
	params := map[string]any{input: e.Value}
	for _, m := range at.PropertyMappings() {
		if m.Input == "" || m.Input == input {
			continue
		}
		if v, ok := obj.Properties.V[m.Property]; ok {
			params[m.Input] = v
		}
	}
	return &Request{Action: at, Actor: e.Actor, Guest: e.Guest, Kind: models.KindInlineEdit, TargetID: obj.ID,
		Parameters: params, Justification: e.Justification, IdempotencyKey: e.IdempotencyKey,
		Identity: Identity(at.ID, models.KindInlineEdit, prop.ObjectTypeID, prop.Name, obj.ID, e.Value, e.Justification)}, nil
}
