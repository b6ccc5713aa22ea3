package ontology

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// ActionTypeView is an action type as the API shows it: its definition
// with identity, version and bookkeeping.
type ActionTypeView struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
	domain.ActionDefinition
	Owner     string    `json:"owner"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// kinds knows which members of the operation config are secrets.
	kinds *domain.Kinds
}

// RedactedValue replaces a secret in an action type shown to a caller
// who may not change it (one value: domain.RedactedValue, which a
// what-if's preview uses too).
const RedactedValue = domain.RedactedValue

// RedactSecrets replaces the values of v's webhook headers (they commonly
// carry credentials) with RedactedValue; the header names stay. The API
// shows action types this way to callers without PermWrite.
func (v *ActionTypeView) RedactSecrets() {
	v.Config.Operation = v.kinds.RedactSecrets(v.ActionDefinition, RedactedValue)
}

func definitionOf(at *models.ActionType) domain.ActionDefinition {
	return domain.ActionDefinition{Name: at.Name, DisplayName: at.DisplayName, Description: at.Description,
		ObjectTypeID: at.ObjectTypeID, OperationKind: at.OperationKind, Inputs: at.Inputs.V,
		FormSchema: at.FormSchema.V, Config: at.Config.V, Policy: at.Policy.V}
}

func (s *Store) viewOf(at *models.ActionType) *ActionTypeView {
	return &ActionTypeView{ID: at.ID, Version: at.Version, ActionDefinition: definitionOf(at), Owner: at.Owner,
		CreatedAt: at.CreatedAt, UpdatedAt: at.UpdatedAt, kinds: s.kinds}
}

// usesLinkType reports whether d's operation links through link type id.
func (s *Store) usesLinkType(d domain.ActionDefinition, id string) bool {
	for _, lt := range s.kinds.References(d).LinkTypeIDs {
		if lt == id {
			return true
		}
	}
	return false
}

// findActionType loads an action type by id or name.
func findActionType(ctx context.Context, db *gorm.DB, ref string) (*models.ActionType, error) {
	return findByRef[models.ActionType](ctx, db, ref, apperr.ActionTypeNotFound, "action type")
}

func allActionTypes(ctx context.Context, db *gorm.DB) ([]models.ActionType, error) {
	var ats []models.ActionType
	if err := db.WithContext(ctx).Order("name").Find(&ats).Error; err != nil {
		return nil, fmt.Errorf("load action types: %w", err)
	}
	return ats, nil
}

// ActionType returns the action type (by id or name) as the engine reads
// it; an unknown one is ActionTypeNotFound.
func (s *Store) ActionType(ctx context.Context, id string) (*domain.ActionType, error) {
	at, err := findActionType(ctx, s.db, id)
	if err != nil {
		return nil, err
	}
	return &domain.ActionType{ID: at.ID, Version: at.Version, ActionDefinition: definitionOf(at)}, nil
}

// GetActionType returns the action type (by id or name) as the API shows
// it.
func (s *Store) GetActionType(ctx context.Context, ref string) (*ActionTypeView, error) {
	at, err := findActionType(ctx, s.db, ref)
	if err != nil {
		return nil, err
	}
	return s.viewOf(at), nil
}

// ListActionTypes lists action types, optionally of one object type (id
// or name) and matching search in name, display name or description.
func (s *Store) ListActionTypes(ctx context.Context, objectType, search string, offset, limit int) ([]ActionTypeView, error) {
	q := searchClause(s.db.WithContext(ctx).Model(&models.ActionType{}), search, "name", "display_name", "description")
	if objectType != "" {
		ot, err := findObjectType(ctx, s.db, objectType)
		if err != nil {
			return nil, err
		}
		q = q.Where("object_type_id = ?", ot.ID)
	}
	var ats []models.ActionType
	if err := q.Order("name").Offset(offset).Limit(limit).Find(&ats).Error; err != nil {
		return nil, fmt.Errorf("list action types: %w", err)
	}
	out := make([]ActionTypeView, 0, len(ats))
	for i := range ats {
		out = append(out, *s.viewOf(&ats[i]))
	}
	return out, nil
}

// validateAction resolves an object type given by name to its id and runs
// every definition-time check.
func (s *Store) validateAction(ctx context.Context, tx *gorm.DB, d *domain.ActionDefinition) error {
	if err := checkNotUUID(apperr.InvalidDefinition, d.Name); err != nil {
		return err
	}
	if d.ObjectTypeID != "" && !domain.IsUUID(d.ObjectTypeID) {
		ot, err := findObjectType(ctx, tx, d.ObjectTypeID)
		if apperr.Is(err, apperr.ObjectTypeNotFound) {
			return apperr.New(apperr.InvalidDefinition, "object_type_id: object type %q does not exist", d.ObjectTypeID).
				WithDetails(apperr.Detail{Field: "object_type_id", Reason: "not_found", Message: "no such object type"})
		}
		if err != nil {
			return err
		}
		d.ObjectTypeID = ot.ID
	}
	d.ObjectTypeID = strings.ToLower(d.ObjectTypeID)
	if err := s.kinds.ResolveRefs(d, typeRefs{ctx: ctx, db: tx}); err != nil {
		return err
	}
	if err := domain.ValidateDefinition(ctx, *d, s.kinds, dbLookup{ctx: ctx, db: tx}, s.checkEnv(ctx, tx)); err != nil {
		return err
	}
	if err := s.checkSecretUses(ctx, *d); err != nil {
		return err
	}
	// Stored in its kind's form: one spelling whatever the client sent.
	op, err := s.kinds.Canonical(*d)
	if err != nil {
		return err
	}
	d.Config.Operation = op
	return nil
}

// typeRefs resolves the types a definition names by id or name.
type typeRefs struct {
	ctx context.Context
	db  *gorm.DB
}

func (r typeRefs) ObjectTypeID(ref string) (string, bool, error) {
	ot, err := findObjectType(r.ctx, r.db, ref)
	if apperr.Is(err, apperr.ObjectTypeNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return ot.ID, true, nil
}

func (r typeRefs) LinkTypeID(ref string) (string, bool, error) {
	lt, err := findLinkType(r.ctx, r.db, ref)
	if apperr.Is(err, apperr.LinkTypeNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return lt.ID, true, nil
}

func applyDefinition(at *models.ActionType, d domain.ActionDefinition) {
	at.Name, at.DisplayName, at.Description = d.Name, d.DisplayName, d.Description
	at.ObjectTypeID, at.OperationKind = d.ObjectTypeID, d.OperationKind
	at.Inputs = models.NumJSON[[]domain.InputField]{V: d.Inputs}
	at.FormSchema = models.NumJSON[domain.FormSchema]{V: d.FormSchema}
	at.Config = models.NumJSON[domain.ActionConfig]{V: d.Config}
	at.Policy = models.NumJSON[domain.Policy]{V: d.Policy}
}

// CreateActionType validates and stores a new action type (version 1).
func (s *Store) CreateActionType(ctx context.Context, owner string, d domain.ActionDefinition) (*ActionTypeView, error) {
	var out *models.ActionType
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := s.validateAction(ctx, tx, &d); err != nil {
			return err
		}
		if err := s.nameFree(ctx, tx, &models.ActionType{}, "action type", d.Name, ""); err != nil {
			return err
		}
		at := &models.ActionType{ID: newID(), Version: 1, Owner: owner}
		applyDefinition(at, d)
		if err := tx.Create(at).Error; err != nil {
			if isUnique(err) {
				return apperr.New(apperr.Conflict, "an action type named %q already exists", d.Name)
			}
			return fmt.Errorf("create action type: %w", err)
		}
		out = at
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "action type created", "id", out.ID, "name", out.Name, "kind", out.OperationKind, "owner", owner)
	return s.viewOf(out), nil
}

// UpdateActionType replaces an action type's definition and increments
// its version. The name is stable: it cannot change. Properties whose
// inline_edit_config names the action must stay valid.
func (s *Store) UpdateActionType(ctx context.Context, ref string, d domain.ActionDefinition) (*ActionTypeView, error) {
	var out *models.ActionType
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		at, err := findActionType(ctx, tx, ref)
		if err != nil {
			return err
		}
		if d.Name == "" {
			d.Name = at.Name
		}
		if d.Name != at.Name {
			return apperr.New(apperr.InvalidDefinition, "name: an action type's name is stable and cannot change (from %q to %q)", at.Name, d.Name).
				WithDetails(apperr.Detail{Field: "name", Reason: "immutable", Message: "name cannot change"})
		}
		if err := s.validateAction(ctx, tx, &d); err != nil {
			return err
		}
		props, err := inlineEditUsers(ctx, tx, at.ID)
		if err != nil {
			return err
		}
		for _, p := range props {
			if _, err := domain.ValidateInlineEdit(p.ObjectTypeID, propInfo(p), *p.InlineEdit.V, d); err != nil {
				msg := err.Error()
				if ae, ok := apperr.As(err); ok {
					msg = ae.Message
				}
				owner := typeName(ctx, tx, p.ObjectTypeID)
				return apperr.New(apperr.InvalidDefinition, "property %s of object type %s edits inline with this action, and would no longer be valid: %s", p.Name, owner, msg).
					WithDetails(apperr.Detail{Field: "inline_edit_config", Reason: "inline_edit", Message: "property " + p.Name + " of object type " + owner})
			}
		}
		applyDefinition(at, d)
		at.Version++
		// The version guard turns a concurrent update into a retryable
		// conflict instead of a lost update.
		res := tx.Model(&models.ActionType{}).Where("id = ? AND version = ?", at.ID, at.Version-1).Updates(map[string]any{
			"display_name": at.DisplayName, "description": at.Description, "object_type_id": at.ObjectTypeID,
			"operation_kind": at.OperationKind, "inputs": at.Inputs, "form_schema": at.FormSchema,
			"config": at.Config, "policy": at.Policy, "version": at.Version, "updated_at": time.Now().UTC(),
		})
		if res.Error != nil {
			return fmt.Errorf("update action type: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return apperr.New(apperr.Conflict, "action type %s was changed concurrently; retry", at.Name)
		}
		out, err = findActionType(ctx, tx, at.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	// Executions record the version they ran; the log ties versions to time.
	s.log.InfoContext(ctx, "action type updated", "id", out.ID, "name", out.Name, "version", out.Version)
	return s.viewOf(out), nil
}

// PatchActionType changes the members of an action type named in p (each
// replaces the whole member) and increments its version.
func (s *Store) PatchActionType(ctx context.Context, ref string, p Patch) (*ActionTypeView, error) {
	at, err := findActionType(ctx, s.db, ref)
	if err != nil {
		return nil, err
	}
	var d domain.ActionDefinition
	if err := p.apply(definitionOf(at), &d); err != nil {
		return nil, err
	}
	return s.UpdateActionType(ctx, at.ID, d)
}

// inlineEditUsers are the properties whose inline_edit_config names
// action type id.
func inlineEditUsers(ctx context.Context, tx *gorm.DB, id string) ([]models.Property, error) {
	var cands []models.Property
	// The LIKE narrows the scan; the decoded config decides.
	if err := tx.WithContext(ctx).Where("inline_edit LIKE ?", "%"+id+"%").Find(&cands).Error; err != nil {
		return nil, fmt.Errorf("find inline edit configs: %w", err)
	}
	var out []models.Property
	for _, p := range cands {
		if p.InlineEdit.V != nil && p.InlineEdit.V.ActionTypeID == id {
			out = append(out, p)
		}
	}
	return out, nil
}

// DeleteActionType deletes an action type; it is refused while a
// property's inline_edit_config names it. Executions keep their record of
// it.
func (s *Store) DeleteActionType(ctx context.Context, ref string) error {
	var deleted *models.ActionType
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		at, err := findActionType(ctx, tx, ref)
		if err != nil {
			return err
		}
		props, err := inlineEditUsers(ctx, tx, at.ID)
		if err != nil {
			return err
		}
		if len(props) > 0 {
			deps := make([]apperr.Detail, 0, len(props))
			for _, p := range props {
				deps = append(deps, apperr.Detail{Field: "properties", Reason: p.ObjectTypeID,
					Message: fmt.Sprintf("inline_edit_config of property %s of object type %s", p.Name, typeName(ctx, tx, p.ObjectTypeID))})
			}
			return dependents("action type "+at.Name, deps)
		}
		if err := tx.Delete(at).Error; err != nil {
			return fmt.Errorf("delete action type: %w", err)
		}
		deleted = at
		return nil
	})
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "action type deleted", "id", deleted.ID, "name", deleted.Name, "version", deleted.Version)
	return nil
}

// typeName is the name of object type id for messages (the id when it
// cannot be read).
func typeName(ctx context.Context, tx *gorm.DB, id string) string {
	if ot, err := findObjectType(ctx, tx, id); err == nil {
		return ot.Name
	}
	return id
}
