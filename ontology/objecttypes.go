package ontology

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// ObjectTypeSpec is the body that creates or replaces an object type.
// Properties are accepted on create only; afterwards they have their own
// routes.
type ObjectTypeSpec struct {
	Name        string         `json:"name"`
	DisplayName string         `json:"display_name,omitempty"`
	Description string         `json:"description,omitempty"`
	PrimaryKey  string         `json:"primary_key,omitempty"`
	Icon        string         `json:"icon,omitempty"`
	Color       string         `json:"color,omitempty"`
	Properties  []PropertySpec `json:"properties,omitempty"`
}

// PropertySpec is the body that creates or replaces a property.
type PropertySpec struct {
	Name             string                   `json:"name"`
	DisplayName      string                   `json:"display_name,omitempty"`
	Description      string                   `json:"description,omitempty"`
	Type             domain.PropertyType      `json:"type"`
	Required         bool                     `json:"required,omitempty"`
	Unique           bool                     `json:"unique,omitempty"`
	DefaultValue     any                      `json:"default_value,omitempty"`
	InlineEditConfig *domain.InlineEditConfig `json:"inline_edit_config,omitempty"`
}

// ObjectTypeView is an object type with its properties, as the API shows it.
type ObjectTypeView struct {
	models.ObjectType
	Properties []models.Property `json:"properties"`
}

func specOfProperty(p models.Property) PropertySpec {
	return PropertySpec{Name: p.Name, DisplayName: p.DisplayName, Description: p.Description, Type: p.Type.V,
		Required: p.Required, Unique: p.Unique, DefaultValue: p.DefaultValue.V, InlineEditConfig: p.InlineEdit.V}
}

func specOfObjectType(ot models.ObjectType) ObjectTypeSpec {
	return ObjectTypeSpec{Name: ot.Name, DisplayName: ot.DisplayName, Description: ot.Description,
		PrimaryKey: ot.PrimaryKey, Icon: ot.Icon, Color: ot.Color}
}

// findObjectType loads an object type by id or name.
func findObjectType(ctx context.Context, db *gorm.DB, ref string) (*models.ObjectType, error) {
	return findByRef[models.ObjectType](ctx, db, ref, apperr.ObjectTypeNotFound, "object type")
}

// ObjectType returns an object type (by id or name) with its properties.
func (s *Store) ObjectType(ctx context.Context, ref string) (*ObjectTypeView, error) {
	ot, err := findObjectType(ctx, s.db, ref)
	if err != nil {
		return nil, err
	}
	props, err := loadProperties(ctx, s.db, ot.ID)
	if err != nil {
		return nil, err
	}
	return &ObjectTypeView{ObjectType: *ot, Properties: nonNil(props)}, nil
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// ListObjectTypes lists object types whose name, display name or
// description contains search (case-insensitive), by name.
func (s *Store) ListObjectTypes(ctx context.Context, search string, offset, limit int) ([]ObjectTypeView, error) {
	var ots []models.ObjectType
	q := searchClause(s.db.WithContext(ctx).Model(&models.ObjectType{}), search, "name", "display_name", "description")
	if err := q.Order("name").Offset(offset).Limit(limit).Find(&ots).Error; err != nil {
		return nil, fmt.Errorf("list object types: %w", err)
	}
	out := make([]ObjectTypeView, 0, len(ots))
	for _, ot := range ots {
		props, err := loadProperties(ctx, s.db, ot.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, ObjectTypeView{ObjectType: ot, Properties: nonNil(props)})
	}
	return out, nil
}

func (s *Store) checkObjectTypeSpec(sp ObjectTypeSpec) error {
	if sp.Name == "" {
		return ontErr("name", "required", "an object type needs a name")
	}
	if !domain.NameRE.MatchString(sp.Name) {
		return ontErr("name", "format", "name %q must match %s", sp.Name, domain.NameRE)
	}
	if err := checkNotUUID(apperr.InvalidOntology, sp.Name); err != nil {
		return err
	}
	if len(sp.DisplayName) > 256 {
		return ontErr("display_name", "too_long", "display_name is at most 256 characters")
	}
	if len(sp.Icon) > 128 {
		return ontErr("icon", "too_long", "icon is at most 128 characters")
	}
	if len(sp.Color) > 32 {
		return ontErr("color", "too_long", "color is at most 32 characters")
	}
	return nil
}

// checkPrimaryKey checks that pk names a string or integer property and
// forces it required and unique.
func checkPrimaryKey(pk string, props []*PropertySpec) error {
	if pk == "" {
		return nil
	}
	for _, p := range props {
		if p.Name != pk {
			continue
		}
		if p.Type.Base != domain.TypeString && p.Type.Base != domain.TypeInteger {
			return ontErr("primary_key", "type", "the primary key property %q must be a string or integer, it is %s", pk, p.Type)
		}
		p.Required, p.Unique = true, true
		return nil
	}
	return ontErr("primary_key", "unknown_property", "primary_key %q names no property of this object type", pk)
}

// CreateObjectType creates an object type with its properties.
func (s *Store) CreateObjectType(ctx context.Context, owner string, sp ObjectTypeSpec) (*ObjectTypeView, error) {
	if err := s.checkObjectTypeSpec(sp); err != nil {
		return nil, err
	}
	ot := models.ObjectType{ID: newID(), Name: sp.Name, DisplayName: sp.DisplayName, Description: sp.Description,
		PrimaryKey: sp.PrimaryKey, Icon: sp.Icon, Color: sp.Color, Owner: owner}
	ptrs := make([]*PropertySpec, len(sp.Properties))
	for i := range sp.Properties {
		ptrs[i] = &sp.Properties[i]
	}
	if err := checkPrimaryKey(sp.PrimaryKey, ptrs); err != nil {
		return nil, err
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := s.nameFree(ctx, tx, &models.ObjectType{}, "object type", sp.Name, ""); err != nil {
			return err
		}
		if err := tx.Create(&ot).Error; err != nil {
			if isUnique(err) {
				return apperr.New(apperr.Conflict, "an object type named %q already exists", sp.Name)
			}
			return fmt.Errorf("create object type: %w", err)
		}
		seen := map[string]bool{}
		for i, ps := range sp.Properties {
			f := fmt.Sprintf("properties[%d]", i)
			if seen[ps.Name] {
				return ontErr(f+".name", "duplicate", "duplicate property %q", ps.Name)
			}
			seen[ps.Name] = true
			p, err := s.buildProperty(ctx, tx, &ot, f, ps, nil)
			if err != nil {
				return err
			}
			p.Position = i
			if err := tx.Create(p).Error; err != nil {
				return fmt.Errorf("create property %s: %w", ps.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.ObjectType(ctx, ot.ID)
}

// withArticle puts "a" or "an" before a kind's name ("an object type"):
// the message is read by people, and "a object type" reads as a slip.
func withArticle(what string) string {
	if what != "" && strings.ContainsRune("aeiou", rune(what[0])) {
		return "an " + what
	}
	return "a " + what
}

// nameFree refuses a name another record (not exceptID) of model holds.
func (s *Store) nameFree(ctx context.Context, tx *gorm.DB, model any, what, name, exceptID string) error {
	var n int64
	q := tx.WithContext(ctx).Model(model).Where("name = ?", name)
	if exceptID != "" {
		q = q.Where("id <> ?", exceptID)
	}
	if err := q.Count(&n).Error; err != nil {
		return fmt.Errorf("check %s name: %w", what, err)
	}
	if n > 0 {
		return apperr.New(apperr.Conflict, "%s named %q already exists", withArticle(what), name).
			WithDetails(apperr.Detail{Field: "name", Reason: "duplicate", Message: "name already used"})
	}
	return nil
}

// UpdateObjectType replaces the object type's own members (properties
// have their own routes).
func (s *Store) UpdateObjectType(ctx context.Context, ref string, sp ObjectTypeSpec) (*ObjectTypeView, error) {
	if len(sp.Properties) > 0 {
		return nil, ontErr("properties", "not_allowed", "properties are changed through /ontology/types/{type_id}/properties")
	}
	if err := s.checkObjectTypeSpec(sp); err != nil {
		return nil, err
	}
	var id string
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ot, err := findObjectType(ctx, tx, ref)
		if err != nil {
			return err
		}
		id = ot.ID
		if err := s.nameFree(ctx, tx, &models.ObjectType{}, "object type", sp.Name, ot.ID); err != nil {
			return err
		}
		if sp.PrimaryKey != "" && sp.PrimaryKey != ot.PrimaryKey {
			props, err := loadProperties(ctx, tx, ot.ID)
			if err != nil {
				return err
			}
			var pk *models.Property
			for i := range props {
				if props[i].Name == sp.PrimaryKey {
					pk = &props[i]
				}
			}
			if pk == nil {
				return ontErr("primary_key", "unknown_property", "primary_key %q names no property of object type %s", sp.PrimaryKey, ot.Name)
			}
			if b := pk.Type.V.Base; b != domain.TypeString && b != domain.TypeInteger {
				return ontErr("primary_key", "type", "the primary key property %q must be a string or integer, it is %s", pk.Name, pk.Type.V)
			}
			if !pk.Required || !pk.Unique {
				return ontErr("primary_key", "not_unique", "the primary key property %q must be required and unique; make it so first", pk.Name)
			}
		}
		ot.Name, ot.DisplayName, ot.Description = sp.Name, sp.DisplayName, sp.Description
		ot.PrimaryKey, ot.Icon, ot.Color = sp.PrimaryKey, sp.Icon, sp.Color
		if err := tx.Save(ot).Error; err != nil {
			if isUnique(err) {
				return apperr.New(apperr.Conflict, "an object type named %q already exists", sp.Name)
			}
			return fmt.Errorf("update object type: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.ObjectType(ctx, id)
}

// PatchObjectType changes the members named in p.
func (s *Store) PatchObjectType(ctx context.Context, ref string, p Patch) (*ObjectTypeView, error) {
	ot, err := findObjectType(ctx, s.db, ref)
	if err != nil {
		return nil, err
	}
	var sp ObjectTypeSpec
	if err := p.apply(specOfObjectType(*ot), &sp); err != nil {
		return nil, err
	}
	return s.UpdateObjectType(ctx, ot.ID, sp)
}

// DeleteObjectType deletes an object type and its properties. It is
// refused while objects, link types, action types or reference properties
// of other object types depend on it.
func (s *Store) DeleteObjectType(ctx context.Context, ref string) error {
	var deleted *models.ObjectType
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ot, err := findObjectType(ctx, tx, ref)
		if err != nil {
			return err
		}
		var deps []apperr.Detail
		var nObjects int64
		if err := tx.Model(&models.Object{}).Where("object_type_id = ?", ot.ID).Count(&nObjects).Error; err != nil {
			return fmt.Errorf("count objects: %w", err)
		}
		if nObjects > 0 {
			deps = append(deps, apperr.Detail{Field: "objects", Reason: "objects", Message: fmt.Sprintf("%d object(s)", nObjects)})
		}
		var lts []models.LinkType
		if err := tx.Where("source_object_type_id = ? OR target_object_type_id = ?", ot.ID, ot.ID).Order("name").Find(&lts).Error; err != nil {
			return fmt.Errorf("find link types: %w", err)
		}
		for _, lt := range lts {
			deps = append(deps, apperr.Detail{Field: "link_types", Reason: lt.ID, Message: "link type " + lt.Name})
		}
		ats, err := allActionTypes(ctx, tx)
		if err != nil {
			return err
		}
		for _, at := range ats {
			if at.ObjectTypeID == ot.ID || inputsReference(at.Inputs.V, ot.ID) {
				deps = append(deps, apperr.Detail{Field: "action_types", Reason: at.ID, Message: "action type " + at.Name})
			}
		}
		var refs []models.Property
		if err := tx.Where("object_type_id <> ?", ot.ID).Find(&refs).Error; err != nil {
			return fmt.Errorf("find reference properties: %w", err)
		}
		for _, p := range refs {
			for _, id := range p.Type.V.References() {
				if id != ot.ID {
					continue
				}
				owner := typeName(ctx, tx, p.ObjectTypeID)
				deps = append(deps, apperr.Detail{Field: "properties", Reason: p.ObjectTypeID,
					Message: fmt.Sprintf("property %s of object type %s", p.Name, owner)})
			}
		}
		if len(deps) > 0 {
			return dependents("object type "+ot.Name, deps)
		}
		if err := models.DropCounts(ctx, tx, ot.ID); err != nil {
			return err
		}
		if err := tx.Where("object_type_id = ?", ot.ID).Delete(&models.Property{}).Error; err != nil {
			return fmt.Errorf("delete properties: %w", err)
		}
		if err := tx.Where("object_type_id = ?", ot.ID).Delete(&models.UniqueValue{}).Error; err != nil {
			return fmt.Errorf("delete unique values: %w", err)
		}
		if err := tx.Delete(ot).Error; err != nil {
			return fmt.Errorf("delete object type: %w", err)
		}
		deleted = ot
		return nil
	})
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "object type deleted", "id", deleted.ID, "name", deleted.Name)
	return nil
}

func inputsReference(inputs []domain.InputField, objectTypeID string) bool {
	for _, in := range inputs {
		for _, id := range in.Type.References() {
			if id == objectTypeID {
				return true
			}
		}
	}
	return false
}

// selfRefs resolves type names as typeRefs does, and also the name of
// the object type being defined (not stored yet when it is new).
type selfRefs struct {
	typeRefs
	self *models.ObjectType
}

func (r selfRefs) ObjectTypeID(ref string) (string, bool, error) {
	if ref == r.self.Name {
		return r.self.ID, true, nil
	}
	return r.typeRefs.ObjectTypeID(ref)
}

// buildProperty validates sp as a property of ot (field prefixes member
// names in errors) and returns the record to store; prev is the stored
// property when sp replaces one.
func (s *Store) buildProperty(ctx context.Context, tx *gorm.DB, ot *models.ObjectType, field string, sp PropertySpec, prev *models.Property) (*models.Property, error) {
	f := func(m string) string {
		if field == "" {
			return m
		}
		return field + "." + m
	}
	if sp.Name == "" {
		return nil, ontErr(f("name"), "required", "a property needs a name")
	}
	if !domain.IsIdent(sp.Name) {
		return nil, ontErr(f("name"), "format", "property name %q must be letters, digits and underscores, starting with a letter or underscore (at most 64)", sp.Name)
	}
	if len(sp.DisplayName) > 256 {
		return nil, ontErr(f("display_name"), "too_long", "display_name is at most 256 characters")
	}
	if err := domain.ResolveTypeRefs(&sp.Type, selfRefs{typeRefs{ctx: ctx, db: tx}, ot}); err != nil {
		return nil, err
	}
	if err := sp.Type.Validate(f("type")); err != nil {
		return nil, domain.Retag(err, apperr.InvalidDefinition, apperr.InvalidOntology)
	}
	for _, id := range sp.Type.References() {
		var n int64
		if err := tx.WithContext(ctx).Model(&models.ObjectType{}).Where("id = ?", id).Count(&n).Error; err != nil {
			return nil, fmt.Errorf("check referenced object type: %w", err)
		}
		if n == 0 && id != ot.ID {
			return nil, ontErr(f("type.object_type_id"), "not_found", "referenced object type %q does not exist", id)
		}
	}
	if sp.DefaultValue != nil {
		if err := sp.Type.Check(f("default_value"), sp.DefaultValue, s.checkEnv(ctx, tx)); err != nil {
			return nil, domain.Retag(err, apperr.InvalidProperty, apperr.InvalidOntology)
		}
		if sp.Unique {
			return nil, ontErr(f("default_value"), "unique_default", "a unique property cannot have a default value (every object would share it)")
		}
	}
	p := &models.Property{ID: newID(), ObjectTypeID: ot.ID}
	if prev != nil {
		*p = *prev
	} else if err := models.AssignIndexKey(ctx, tx, p); err != nil {
		// Before the property is written: its values are indexed
		// under the key in the same transaction (migrateObjects).
		return nil, err
	}
	p.Name, p.DisplayName, p.Description = sp.Name, sp.DisplayName, sp.Description
	p.Type = models.NewJSON(sp.Type)
	p.Required, p.Unique = sp.Required, sp.Unique
	p.DefaultValue = models.NumJSON[any]{V: nil}
	if sp.DefaultValue != nil {
		p.DefaultValue.V = sp.Type.Normalize(sp.DefaultValue)
	}
	p.InlineEdit = models.NewJSON[*domain.InlineEditConfig](nil)
	if cfg := sp.InlineEditConfig; cfg != nil {
		at, err := findActionType(ctx, tx, cfg.ActionTypeID)
		if err != nil {
			if apperr.Is(err, apperr.ActionTypeNotFound) {
				return nil, ontErr(f("inline_edit_config.action_type_id"), "not_found", "action type %q does not exist", cfg.ActionTypeID)
			}
			if cfg.ActionTypeID == "" {
				return nil, ontErr(f("inline_edit_config.action_type_id"), "required", "inline_edit_config needs an action_type_id")
			}
			return nil, err
		}
		stored := *cfg
		stored.ActionTypeID = at.ID
		if _, err := domain.ValidateInlineEdit(ot.ID, propInfo(*p), stored, definitionOf(at)); err != nil {
			return nil, prefixField(domain.Retag(err, apperr.InvalidDefinition, apperr.InvalidOntology), field)
		}
		p.InlineEdit = models.NewJSON(&stored)
	}
	return p, nil
}

// prefixField prefixes the field of an *apperr.Error's details (and its
// message) with prefix.
func prefixField(err error, prefix string) error {
	ae, ok := apperr.As(err)
	if !ok || prefix == "" {
		return err
	}
	cp := *ae
	cp.Details = append([]apperr.Detail(nil), ae.Details...)
	for i := range cp.Details {
		if cp.Details[i].Field != "" {
			cp.Details[i].Field = prefix + "." + cp.Details[i].Field
		}
	}
	cp.Message = prefix + "." + cp.Message
	return &cp
}

// Property returns a property of an object type.
func (s *Store) Property(ctx context.Context, typeRef, name string) (*models.Property, error) {
	ot, err := findObjectType(ctx, s.db, typeRef)
	if err != nil {
		return nil, err
	}
	return findProperty(ctx, s.db, ot, name)
}

func findProperty(ctx context.Context, db *gorm.DB, ot *models.ObjectType, name string) (*models.Property, error) {
	var p models.Property
	err := db.WithContext(ctx).Where("object_type_id = ? AND name = ?", ot.ID, name).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.New(apperr.PropertyNotFound, "object type %s has no property %q", ot.Name, name)
	}
	if err != nil {
		return nil, fmt.Errorf("load property %s: %w", name, err)
	}
	return &p, nil
}

// ListProperties lists the properties of an object type.
func (s *Store) ListProperties(ctx context.Context, typeRef string) ([]models.Property, error) {
	ot, err := findObjectType(ctx, s.db, typeRef)
	if err != nil {
		return nil, err
	}
	props, err := loadProperties(ctx, s.db, ot.ID)
	return nonNil(props), err
}

// CreateProperty adds a property to an object type. A required property
// added to a type that has objects needs a default value, which is written
// into those objects.
func (s *Store) CreateProperty(ctx context.Context, typeRef string, sp PropertySpec) (*models.Property, error) {
	var out *models.Property
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ot, err := findObjectType(ctx, tx, typeRef)
		if err != nil {
			return err
		}
		if _, err := findProperty(ctx, tx, ot, sp.Name); err == nil {
			return apperr.New(apperr.Conflict, "object type %s already has a property %q", ot.Name, sp.Name).
				WithDetails(apperr.Detail{Field: "name", Reason: "duplicate", Message: "property exists"})
		}
		p, err := s.buildProperty(ctx, tx, ot, "", sp, nil)
		if err != nil {
			return err
		}
		var maxPos struct{ N int }
		if err := tx.Model(&models.Property{}).Select("COALESCE(MAX(position), -1) + 1 AS n").
			Where("object_type_id = ?", ot.ID).Scan(&maxPos).Error; err != nil {
			return fmt.Errorf("next property position: %w", err)
		}
		p.Position = maxPos.N
		if err := s.migrateObjects(ctx, tx, ot, nil, p); err != nil {
			return err
		}
		if err := tx.Create(p).Error; err != nil {
			if isUnique(err) {
				return apperr.New(apperr.Conflict, "object type %s already has a property %q", ot.Name, sp.Name)
			}
			return fmt.Errorf("create property: %w", err)
		}
		out = p
		return nil
	})
	return out, err
}

// UpdateProperty replaces a property's definition. The name cannot change.
// Existing objects must fit the new definition (a new required property
// with a default is filled in), and the object type's action types must
// stay valid.
func (s *Store) UpdateProperty(ctx context.Context, typeRef, name string, sp PropertySpec) (*models.Property, error) {
	var out *models.Property
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ot, err := findObjectType(ctx, tx, typeRef)
		if err != nil {
			return err
		}
		prev, err := findProperty(ctx, tx, ot, name)
		if err != nil {
			return err
		}
		if sp.Name == "" {
			sp.Name = prev.Name
		}
		if sp.Name != prev.Name {
			return ontErr("name", "immutable", "a property's name cannot change (create a new property and copy the values)")
		}
		if ot.PrimaryKey == prev.Name && (!sp.Required || !sp.Unique) {
			return ontErr("required", "primary_key", "property %q is the primary key of %s and must stay required and unique", prev.Name, ot.Name)
		}
		p, err := s.buildProperty(ctx, tx, ot, "", sp, prev)
		if err != nil {
			return err
		}
		if err := s.migrateObjects(ctx, tx, ot, prev, p); err != nil {
			return err
		}
		if err := tx.Save(p).Error; err != nil {
			return fmt.Errorf("update property: %w", err)
		}
		if err := s.revalidateActions(ctx, tx, ot.ID, "property "+p.Name); err != nil {
			return err
		}
		out = p
		return nil
	})
	return out, err
}

// PatchProperty changes the members of a property named in p.
func (s *Store) PatchProperty(ctx context.Context, typeRef, name string, p Patch) (*models.Property, error) {
	prev, err := s.Property(ctx, typeRef, name)
	if err != nil {
		return nil, err
	}
	var sp PropertySpec
	if err := p.apply(specOfProperty(*prev), &sp); err != nil {
		return nil, err
	}
	return s.UpdateProperty(ctx, typeRef, name, sp)
}

// DeleteProperty removes a property and its values from the objects of
// the type. It is refused while it is the primary key or action types use
// it.
func (s *Store) DeleteProperty(ctx context.Context, typeRef, name string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ot, err := findObjectType(ctx, tx, typeRef)
		if err != nil {
			return err
		}
		p, err := findProperty(ctx, tx, ot, name)
		if err != nil {
			return err
		}
		var deps []apperr.Detail
		if ot.PrimaryKey == p.Name {
			deps = append(deps, apperr.Detail{Field: "primary_key", Reason: ot.ID, Message: "object type " + ot.Name + " (primary key)"})
		}
		ats, err := allActionTypes(ctx, tx)
		if err != nil {
			return err
		}
		for _, at := range ats {
			if at.ObjectTypeID == ot.ID && s.actionUsesProperty(definitionOf(&at), p.Name) {
				deps = append(deps, apperr.Detail{Field: "action_types", Reason: at.ID, Message: "action type " + at.Name})
			}
		}
		if len(deps) > 0 {
			return dependents("property "+p.Name, deps)
		}
		if err := s.migrateObjects(ctx, tx, ot, p, nil); err != nil {
			return err
		}
		if err := tx.Delete(p).Error; err != nil {
			return fmt.Errorf("delete property: %w", err)
		}
		return nil
	})
}

// actionUsesProperty reports whether d reads or writes property name of
// its object type.
func (s *Store) actionUsesProperty(d domain.ActionDefinition, name string) bool {
	for _, p := range s.kinds.References(d).Properties {
		if p == name {
			return true
		}
	}
	for _, n := range append(d.Config.SideEffects(false), d.Config.SideEffects(true)...) {
		if n.TargetUserPropertyName == name {
			return true
		}
	}
	path := domain.PathTargetPropertiesPrefix + name
	conds := func(cs []domain.Condition) bool {
		for _, c := range cs {
			if c.Path == path {
				return true
			}
		}
		return false
	}
	for _, sec := range d.FormSchema.Sections {
		for _, o := range sec.Overrides {
			if conds(o.Conditions) {
				return true
			}
		}
	}
	for _, o := range d.FormSchema.ParameterOverrides {
		if conds(o.Conditions) {
			return true
		}
	}
	return false
}

// revalidateActions re-checks every action type of objectTypeID after a
// change of its properties and refuses the change when one would become
// invalid.
func (s *Store) revalidateActions(ctx context.Context, tx *gorm.DB, objectTypeID, what string) error {
	var ats []models.ActionType
	if err := tx.Where("object_type_id = ?", objectTypeID).Order("name").Find(&ats).Error; err != nil {
		return fmt.Errorf("load action types: %w", err)
	}
	lookup := dbLookup{ctx: ctx, db: tx}
	for _, at := range ats {
		err := domain.ValidateDefinition(ctx, definitionOf(&at), s.kinds, lookup, domain.CheckEnv{Markings: s.levels})
		if ae, ok := apperr.As(err); ok && ae.Code == apperr.InvalidDefinition {
			return apperr.New(apperr.InvalidOntology, "changing %s would make action type %s invalid: %s", what, at.Name, ae.Message).
				WithDetails(apperr.Detail{Field: "action_types", Reason: at.ID, Message: "action type " + at.Name + ": " + ae.Message})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// migrateObjects brings the objects of ot in line with a property change:
// prev → next (prev nil: added, next nil: removed). Values that do not fit
// a new type refuse the change (409); a new required property without
// values needs a default, which is filled in; unique values are indexed.
func (s *Store) migrateObjects(ctx context.Context, tx *gorm.DB, ot *models.ObjectType, prev, next *models.Property) error {
	name := ""
	if prev != nil {
		name = prev.Name
	} else {
		name = next.Name
	}
	if prev != nil && prev.Unique && (next == nil || !next.Unique || !next.Type.V.Equal(prev.Type.V)) {
		if err := tx.Where("object_type_id = ? AND property = ?", ot.ID, name).Delete(&models.UniqueValue{}).Error; err != nil {
			return fmt.Errorf("drop unique index of %s: %w", name, err)
		}
	}
	reindex := next != nil && next.Unique && (prev == nil || !prev.Unique || !next.Type.V.Equal(prev.Type.V))
	// The property-value index: rebuilt for the property when it is
	// added, dropped or changes type; else rewritten where a value changes.
	prop := models.PropKey(*cmp.Or(prev, next))
	rebuild := prev == nil || next == nil || !prev.Type.V.Equal(next.Type.V)
	if rebuild {
		if err := models.DropPropertyIndex(ctx, tx, prop); err != nil {
			return err
		}
	}
	env := domain.CheckEnv{Markings: s.levels}
	var objs []models.Object
	err := tx.Where("object_type_id = ?", ot.ID).Order("id").FindInBatches(&objs, 500, func(b *gorm.DB, _ int) error {
		for i := range objs {
			o := &objs[i]
			props := o.Properties.V
			if props == nil {
				props = map[string]any{}
			}
			v, has := props[name]
			changed := false
			switch {
			case next == nil:
				if has {
					delete(props, name)
					changed = true
				}
			case !has || v == nil:
				if next.DefaultValue.V != nil && next.Required {
					props[name] = next.DefaultValue.V
					changed = true
				} else if next.Required {
					return apperr.New(apperr.Conflict, "object %s has no value for %s; a required property added to a type with objects needs a default_value", o.ID, name).
						WithDetails(apperr.Detail{Field: "required", Reason: "objects_without_value", Message: "object " + o.ID})
				}
			default:
				if err := next.Type.V.Check("properties."+name, v, env); err != nil {
					msg := err.Error()
					if ae, ok := apperr.As(err); ok {
						msg = ae.Message
					}
					return apperr.New(apperr.Conflict, "object %s holds a value that does not fit the new definition: %s", o.ID, msg).
						WithDetails(apperr.Detail{Field: "type", Reason: "objects_do_not_fit", Message: "object " + o.ID})
				}
				if nv := next.Type.V.Normalize(v); prev != nil && !prev.Type.V.Equal(next.Type.V) {
					props[name] = nv
					changed = true
				}
			}
			if reindex {
				if v, ok := props[name]; ok && v != nil {
					if err := s.claimUnique(ctx, tx, ot.ID, name, next.Type.V, v, o.ID); err != nil {
						return err
					}
				}
			}
			if changed {
				o.Properties.V = props
				if err := tx.Model(o).UpdateColumn("properties", o.Properties).Error; err != nil {
					return fmt.Errorf("rewrite object %s: %w", o.ID, err)
				}
			}
			if next != nil && (rebuild || changed) {
				if err := models.IndexProperty(ctx, tx, o.ID, o.CreatedAt, *next, o.Properties.V, !rebuild); err != nil {
					return err
				}
			}
		}
		return nil
	}).Error
	if err != nil {
		if _, ok := apperr.As(err); ok {
			return err
		}
		return fmt.Errorf("migrate objects of %s: %w", ot.Name, err)
	}
	return nil
}
