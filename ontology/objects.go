package ontology

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// ObjectSpec is the body that creates an object or replaces its
// properties. Marking defaults to the lowest level on create and is kept
// on replace when empty; Organization (admins only) defaults to the
// creator's.
type ObjectSpec struct {
	Properties   map[string]any `json:"properties"`
	Marking      string         `json:"marking,omitempty"`
	Organization *string        `json:"organization,omitempty"`
}

// ObjectPatch is the PATCH body of an object: Mode "merge" (the default)
// sets the given properties and clears those given as null; "replace"
// makes Properties the whole property set.
type ObjectPatch struct {
	Properties map[string]any `json:"properties"`
	Marking    string         `json:"marking,omitempty"`
	Mode       string         `json:"mode,omitempty"`
}

// Patch modes.
const (
	ModeMerge   = "merge"
	ModeReplace = "replace"
)

// typeState is an object type with its property definitions, loaded once
// per write.
type typeState struct {
	ot    *models.ObjectType
	props []models.Property
	byKey map[string]*models.Property
}

func loadTypeState(ctx context.Context, db *gorm.DB, ref string) (*typeState, error) {
	ot, err := findObjectType(ctx, db, ref)
	if err != nil {
		return nil, err
	}
	props, err := loadProperties(ctx, db, ot.ID)
	if err != nil {
		return nil, err
	}
	ts := &typeState{ot: ot, props: props, byKey: map[string]*models.Property{}}
	for i := range ts.props {
		ts.byKey[ts.props[i].Name] = &ts.props[i]
	}
	return ts, nil
}

// prepareProps validates a write of input over base (the stored
// properties; nil on create) and returns the resulting property set. With
// merge, input members are set over base and null members cleared;
// without, input is the whole set. Defaults fill absent properties on
// create. Failures are one InvalidProperty error with a detail per
// offending property.
func (s *Store) prepareProps(ctx context.Context, tx *gorm.DB, ts *typeState, base, input map[string]any, merge, create bool) (map[string]any, error) {
	out := map[string]any{}
	if merge {
		for k, v := range base {
			out[k] = v
		}
	}
	var details []apperr.Detail
	add := func(err error) {
		if ae, ok := apperr.As(err); ok && ae.Code == apperr.InvalidProperty {
			details = append(details, ae.Details...)
			return
		}
		details = append(details, apperr.Detail{Message: err.Error()})
	}
	env := s.checkEnv(ctx, tx)
	for _, k := range sortedKeys(input) {
		v := input[k]
		f := "properties." + k
		p, ok := ts.byKey[k]
		if !ok {
			details = append(details, apperr.Detail{Field: f, Reason: "unknown_property",
				Message: fmt.Sprintf("object type %s has no property %q", ts.ot.Name, k)})
			continue
		}
		if v == nil {
			delete(out, k)
			continue
		}
		penv := env
		if old, ok := base[k]; ok && domain.ValuesEqual(old, v) {
			// Not written, kept (a replace resending it): a reference
			// someone else set stays even if this writer may not read
			// its object.
			penv.ResolveReference, penv.CheckMedia = nil, nil
		}
		if err := p.Type.V.Check(f, v, penv); err != nil {
			if _, ok := apperr.As(err); !ok {
				return nil, fmt.Errorf("check %s: %w", f, err)
			}
			add(err)
			continue
		}
		out[k] = p.Type.V.Normalize(v)
	}
	for _, p := range ts.props {
		if _, has := out[p.Name]; has {
			continue
		}
		if create && p.DefaultValue.V != nil {
			out[p.Name] = p.DefaultValue.V
			continue
		}
		if p.Required {
			details = append(details, apperr.Detail{Field: "properties." + p.Name, Reason: "required",
				Message: fmt.Sprintf("property %q of %s is required", p.Name, ts.ot.Name)})
		}
	}
	if len(details) > 0 {
		msg := details[0].Message
		if details[0].Field != "" && !strings.HasPrefix(msg, details[0].Field) {
			msg = details[0].Field + ": " + msg
		}
		if len(details) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(details)-1)
		}
		return nil, apperr.New(apperr.InvalidProperty, "%s", msg).WithDetails(details...)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// uniqueKey is the canonical form of a unique property's value: the
// normalized value's JSON (timestamps as UTC instants), hashed when long.
func uniqueKey(t domain.PropertyType, v any) string {
	v = t.Normalize(v)
	if t.Base == domain.TypeTimestamp {
		if s, ok := v.(string); ok {
			if ts, ok := domain.ParseTimestamp(s); ok {
				v = ts.UTC().Format(time.RFC3339Nano)
			}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprint(v))
	}
	if len(b) > 120 {
		sum := sha256.Sum256(b)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return string(b)
}

// claimUnique records that objectID holds v for a unique property,
// refusing (409) a value another object holds.
func (s *Store) claimUnique(ctx context.Context, tx *gorm.DB, typeID, prop string, t domain.PropertyType, v any, objectID string) error {
	key := uniqueKey(t, v)
	var holder models.UniqueValue
	err := tx.WithContext(ctx).Where("object_type_id = ? AND property = ? AND value_key = ?", typeID, prop, key).Take(&holder).Error
	switch {
	case err == nil:
		if holder.ObjectID == objectID {
			return nil
		}
		return uniqueErr(prop, key)
	case !errors.Is(err, gorm.ErrRecordNotFound):
		return fmt.Errorf("check unique %s: %w", prop, err)
	}
	row := models.UniqueValue{ObjectTypeID: typeID, Property: prop, ValueKey: key, ObjectID: objectID}
	if err := tx.WithContext(ctx).Create(&row).Error; err != nil {
		if isUnique(err) {
			return uniqueErr(prop, key)
		}
		return fmt.Errorf("record unique %s: %w", prop, err)
	}
	return nil
}

// uniqueErr does not name the object holding the value: the caller may not
// be allowed to read it, and its id is more than the conflict requires.
func uniqueErr(prop, key string) error {
	msg := fmt.Sprintf("property %q must be unique: value %s is already used", prop, key)
	return apperr.New(apperr.UniqueViolation, "%s", msg).
		WithDetails(apperr.Detail{Field: "properties." + prop, Reason: "unique", Message: msg})
}

// syncUnique updates the unique index for objectID going from old to new
// property values.
func (s *Store) syncUnique(ctx context.Context, tx *gorm.DB, ts *typeState, objectID string, old, new map[string]any) error {
	for _, p := range ts.props {
		if !p.Unique {
			continue
		}
		ov, hadOld := old[p.Name]
		nv, hasNew := new[p.Name]
		hadOld, hasNew = hadOld && ov != nil, hasNew && nv != nil
		if hadOld && hasNew && uniqueKey(p.Type.V, ov) == uniqueKey(p.Type.V, nv) {
			continue
		}
		if hadOld {
			if err := tx.WithContext(ctx).Where("object_type_id = ? AND property = ? AND object_id = ?", ts.ot.ID, p.Name, objectID).
				Delete(&models.UniqueValue{}).Error; err != nil {
				return fmt.Errorf("release unique %s: %w", p.Name, err)
			}
		}
		if hasNew {
			if err := s.claimUnique(ctx, tx, ts.ot.ID, p.Name, p.Type.V, nv, objectID); err != nil {
				return err
			}
		}
	}
	return nil
}

// toDomain is the engine's view of an object.
func toDomain(o *models.Object) *domain.Object {
	props := o.Properties.V
	if props == nil {
		props = map[string]any{}
	}
	return &domain.Object{ID: o.ID, ObjectTypeID: o.ObjectTypeID, Properties: props, Marking: o.Marking,
		CreatedBy: o.CreatedBy, Organization: o.Organization, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
}

func (s *Store) loadObject(ctx context.Context, db *gorm.DB, id string) (*models.Object, error) {
	if !domain.IsUUID(id) {
		return nil, nil
	}
	var o models.Object
	err := db.WithContext(ctx).Where("id = ?", strings.ToLower(id)).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load object %s: %w", id, err)
	}
	return &o, nil
}

func (s *Store) objectExists(ctx context.Context, tx *gorm.DB, objectTypeID, id string) (bool, error) {
	if !domain.IsUUID(id) {
		return false, nil
	}
	q := s.conn(ctx, tx).Model(&models.Object{}).Where("id = ?", strings.ToLower(id))
	if objectTypeID != "" {
		q = q.Where("object_type_id = ?", objectTypeID)
	}
	var n int64
	if err := q.Count(&n).Error; err != nil {
		return false, fmt.Errorf("check object %s: %w", id, err)
	}
	return n > 0, nil
}

func objectNotFound(id string) error {
	return apperr.New(apperr.ObjectNotFound, "object %q does not exist", id)
}

// --- engine.Ontology ---

// Object reads an object inside tx (nil, nil when absent). It applies no
// read rule: the engine authorizes the actor against the target itself.
func (s *Store) Object(ctx context.Context, tx *gorm.DB, id string) (*domain.Object, error) {
	o, err := s.loadObject(ctx, s.conn(ctx, tx), id)
	if err != nil || o == nil {
		return nil, err
	}
	return toDomain(o), nil
}

// ObjectExists reports whether id is an object of objectTypeID ("" = any).
func (s *Store) ObjectExists(ctx context.Context, objectTypeID, id string) (bool, error) {
	return s.objectExists(ctx, nil, objectTypeID, id)
}

// UpdateObject merges patch into the object's properties (null clears),
// validated as the REST routes validate, and returns the object after the
// write.
func (s *Store) UpdateObject(ctx context.Context, tx *gorm.DB, id string, patch map[string]any) (*domain.Object, error) {
	var out *models.Object
	err := s.inTx(ctx, tx, func(tx *gorm.DB) error {
		o, err := s.loadObject(ctx, tx, id)
		if err != nil {
			return err
		}
		if o == nil {
			return objectNotFound(id)
		}
		out, err = s.writeObject(ctx, tx, o, patch, "", true)
		return err
	})
	if err != nil {
		return nil, err
	}
	return toDomain(out), nil
}

// CreateObject creates an object of objectTypeID (marking "" = the lowest
// level), validated as the REST routes validate.
func (s *Store) CreateObject(ctx context.Context, tx *gorm.DB, objectTypeID string, props map[string]any, marking, createdBy, organization string) (*domain.Object, error) {
	var out *models.Object
	err := s.inTx(ctx, tx, func(tx *gorm.DB) error {
		var err error
		out, err = s.createObject(ctx, tx, objectTypeID, props, marking, createdBy, organization)
		return err
	})
	if err != nil {
		return nil, err
	}
	return toDomain(out), nil
}

// UpdateObjectFor is UpdateObject with reader's read rule on the
// reference values written (As): the engine applies a function's edits
// through it, values it has not checked itself.
func (s *Store) UpdateObjectFor(ctx context.Context, tx *gorm.DB, reader *models.User, id string, patch map[string]any) (*domain.Object, error) {
	return s.As(reader).UpdateObject(ctx, tx, id, patch)
}

// CreateObjectFor is CreateObject with reader's read rule on the
// reference values written (As).
func (s *Store) CreateObjectFor(ctx context.Context, tx *gorm.DB, reader *models.User, objectTypeID string, props map[string]any, marking, createdBy, organization string) (*domain.Object, error) {
	return s.As(reader).CreateObject(ctx, tx, objectTypeID, props, marking, createdBy, organization)
}

// DeleteObject deletes an object, its links and its unique values, and
// returns the object and its links as they were (what recreating them
// needs; see RestoreObject).
func (s *Store) DeleteObject(ctx context.Context, tx *gorm.DB, id string) (*domain.Object, []domain.Link, error) {
	var obj *domain.Object
	var links []domain.Link
	err := s.inTx(ctx, tx, func(tx *gorm.DB) error {
		o, err := s.loadObject(ctx, tx, id)
		if err != nil {
			return err
		}
		if o == nil {
			return objectNotFound(id)
		}
		if links, err = objectLinks(ctx, tx, o.ID); err != nil {
			return err
		}
		obj = toDomain(o)
		return s.deleteObject(ctx, tx, o)
	})
	if err != nil {
		return nil, nil, err
	}
	return obj, links, nil
}

// CreateLink links sourceID to targetID with link type linkTypeID,
// enforcing types and cardinality, and returns the link id.
func (s *Store) CreateLink(ctx context.Context, tx *gorm.DB, linkTypeID, sourceID, targetID string) (string, error) {
	var id string
	err := s.inTx(ctx, tx, func(tx *gorm.DB) error {
		l, err := s.createLink(ctx, tx, linkTypeID, sourceID, targetID, nil, "")
		if err != nil {
			return err
		}
		id = l.ID
		return nil
	})
	return id, err
}

// --- shared write paths ---

func (s *Store) checkMarking(marking string) error {
	if !s.levels.Valid(marking) {
		return apperr.New(apperr.InvalidArgument, "marking %q is not a configured marking (one of %s)", marking, strings.Join(s.levels, ", ")).
			WithDetails(apperr.Detail{Field: "marking", Reason: "unknown_marking", Message: "unknown marking"})
	}
	return nil
}

func (s *Store) createObject(ctx context.Context, tx *gorm.DB, typeRef string, input map[string]any, marking, createdBy, organization string) (*models.Object, error) {
	ts, err := loadTypeState(ctx, tx, typeRef)
	if err != nil {
		return nil, err
	}
	if marking == "" {
		marking = s.levels.Lowest()
	}
	if err := s.checkMarking(marking); err != nil {
		return nil, err
	}
	props, err := s.prepareProps(ctx, tx, ts, nil, input, false, true)
	if err != nil {
		return nil, err
	}
	o := &models.Object{ID: newID(), ObjectTypeID: ts.ot.ID, Properties: models.NumJSON[map[string]any]{V: props},
		Marking: marking, CreatedBy: createdBy, Organization: organization}
	if err := s.syncUnique(ctx, tx, ts, o.ID, nil, props); err != nil {
		return nil, err
	}
	if err := tx.Create(o).Error; err != nil {
		return nil, fmt.Errorf("create object: %w", err)
	}
	if err := models.CountObjects(ctx, tx, ts.ot.ID, 1); err != nil {
		return nil, err
	}
	if err := s.indexObject(ctx, tx, ts, o, true); err != nil {
		return nil, err
	}
	return o, nil
}

// writeObject validates and stores a change of o's properties (merge or
// replace) and, when marking is set, of its marking.
func (s *Store) writeObject(ctx context.Context, tx *gorm.DB, o *models.Object, input map[string]any, marking string, merge bool) (*models.Object, error) {
	ts, err := loadTypeState(ctx, tx, o.ObjectTypeID)
	if err != nil {
		return nil, err
	}
	if marking != "" {
		if err := s.checkMarking(marking); err != nil {
			return nil, err
		}
		o.Marking = marking
	}
	old := o.Properties.V
	props, err := s.prepareProps(ctx, tx, ts, old, input, merge, false)
	if err != nil {
		return nil, err
	}
	if err := s.syncUnique(ctx, tx, ts, o.ID, old, props); err != nil {
		return nil, err
	}
	o.Properties = models.NumJSON[map[string]any]{V: props}
	// At the databases' common precision (Postgres keeps microseconds), so
	// the time an edit records is the time stored.
	o.UpdatedAt = time.Now().UTC().Truncate(time.Microsecond)
	if err := tx.Model(o).Select("properties", "marking", "updated_at").Updates(o).Error; err != nil {
		return nil, fmt.Errorf("update object %s: %w", o.ID, err)
	}
	if err := s.reindexChanged(ctx, tx, ts, o, old); err != nil {
		return nil, err
	}
	return o, nil
}

// reindexChanged rewrites the index rows of the properties an update
// changed, and only those: an index row is a function of its property's
// value alone, so an unchanged value keeps its rows. Rewriting every
// property's rows (and the trigram text) on each update halved the
// direct path's throughput in actionbench.
func (s *Store) reindexChanged(ctx context.Context, tx *gorm.DB, ts *typeState, o *models.Object, old map[string]any) error {
	for _, p := range ts.props {
		if reflect.DeepEqual(old[p.Name], o.Properties.V[p.Name]) {
			continue
		}
		if err := models.IndexProperty(ctx, tx, o.ID, o.CreatedAt, p, o.Properties.V, true); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) deleteObject(ctx context.Context, tx *gorm.DB, o *models.Object) error {
	if err := tx.Where("source_id = ? OR target_id = ?", o.ID, o.ID).Delete(&models.Link{}).Error; err != nil {
		return fmt.Errorf("delete links of %s: %w", o.ID, err)
	}
	if err := tx.Where("object_id = ?", o.ID).Delete(&models.UniqueValue{}).Error; err != nil {
		return fmt.Errorf("delete unique values of %s: %w", o.ID, err)
	}
	// The object's row before its index rows, as an update locks them,
	// and its type's count before its values', as a create does: two
	// writers of one object, or of one counter shard, then wait for each
	// other instead of deadlocking.
	res := tx.Delete(o)
	if res.Error != nil {
		return fmt.Errorf("delete object %s: %w", o.ID, res.Error)
	}
	// A concurrent delete of the same object may have come first: only
	// the row deleted here is uncounted.
	if err := models.CountObjects(ctx, tx, o.ObjectTypeID, -res.RowsAffected); err != nil {
		return err
	}
	return models.UnindexObject(ctx, tx, o.ID)
}

// --- REST paths: the caller's read rule applies ---

// readable loads object id of type typeRef that u may read; an object u
// may not read is reported as absent, so its existence does not leak.
func (s *Store) readable(ctx context.Context, db *gorm.DB, u *models.User, typeRef, id string) (*models.Object, error) {
	ot, err := findObjectType(ctx, db, typeRef)
	if err != nil {
		return nil, err
	}
	o, err := s.loadObject(ctx, db, id)
	if err != nil {
		return nil, err
	}
	if o == nil || o.ObjectTypeID != ot.ID || !s.CanRead(u, o.Marking, o.Organization) {
		return nil, objectNotFound(id)
	}
	return o, nil
}

// mayMark refuses a marking above u's clearance (u could not read the
// object any more); admins may set any marking.
func (s *Store) mayMark(u *models.User, marking string) error {
	if marking == "" || u.IsAdmin() || !s.levels.Valid(marking) || s.levels.Dominates(u.Clearance, marking) {
		return nil
	}
	return apperr.New(apperr.PermissionDenied, "marking %q is above your clearance %q", marking, u.Clearance).
		WithDetails(apperr.Detail{Field: "marking", Reason: "clearance", Message: "marking above clearance"})
}

// mayLower refuses a non-admin lowering an object's marking from current
// to next. Markings are one ordered level, so the caller (who can read the
// object) always holds the level being removed; lowering it is a
// declassification, which only admins may do. Raising (up to u's
// clearance, see mayMark) and keeping the marking are allowed.
func (s *Store) mayLower(u *models.User, current, next string) error {
	if next == "" || u.IsAdmin() || s.levels.Rank(next) >= s.levels.Rank(current) {
		return nil
	}
	return apperr.New(apperr.PermissionDenied, "only an admin may lower an object's marking (from %q to %q)", current, next).
		WithDetails(apperr.Detail{Field: "marking", Reason: "declassify", Message: "lowering a marking needs the admin role"})
}

// GetObject reads an object u may read.
func (s *Store) GetObject(ctx context.Context, u *models.User, typeRef, id string) (*models.Object, error) {
	return s.readable(ctx, s.db, u, typeRef, id)
}

// CreateObjectAs creates an object for u: created_by is u, the
// organization u's (admins may name another).
func (s *Store) CreateObjectAs(ctx context.Context, u *models.User, typeRef string, sp ObjectSpec) (*models.Object, error) {
	org := u.Organization
	if sp.Organization != nil && *sp.Organization != org {
		if !u.IsAdmin() {
			return nil, apperr.New(apperr.PermissionDenied, "only admins may create objects for another organization").
				WithDetails(apperr.Detail{Field: "organization", Reason: "organization", Message: "not your organization"})
		}
		org = *sp.Organization
		// The column is varchar(128): refused here, not as a 500 there.
		if utf8.RuneCountInString(org) > models.MaxOrganizationLen || !utf8.ValidString(org) {
			msg := fmt.Sprintf("at most %d characters of UTF-8 text", models.MaxOrganizationLen)
			return nil, apperr.New(apperr.InvalidArgument, "organization must be %s", msg).
				WithDetails(apperr.Detail{Field: "organization", Reason: "invalid", Message: msg})
		}
	}
	if err := s.mayMark(u, sp.Marking); err != nil {
		return nil, err
	}
	var out *models.Object
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		out, err = s.As(u).createObject(ctx, tx, typeRef, sp.Properties, sp.Marking, u.ID, org)
		return err
	})
	return out, err
}

// PatchObjectAs changes an object u may read (merge or replace).
func (s *Store) PatchObjectAs(ctx context.Context, u *models.User, typeRef, id string, p ObjectPatch) (*models.Object, error) {
	merge := true
	switch p.Mode {
	case "", ModeMerge:
	case ModeReplace:
		merge = false
	default:
		return nil, apperr.New(apperr.InvalidArgument, "mode must be merge or replace, got %q", p.Mode).
			WithDetails(apperr.Detail{Field: "mode", Reason: "unknown_mode", Message: "merge or replace"})
	}
	if !merge && p.Properties == nil {
		return nil, apperr.New(apperr.InvalidArgument, "replace needs properties").
			WithDetails(apperr.Detail{Field: "properties", Reason: "required", Message: "properties required"})
	}
	if err := s.mayMark(u, p.Marking); err != nil {
		return nil, err
	}
	var out *models.Object
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		o, err := s.readable(ctx, tx, u, typeRef, id)
		if err != nil {
			return err
		}
		if err := s.mayLower(u, o.Marking, p.Marking); err != nil {
			return err
		}
		out, err = s.As(u).writeObject(ctx, tx, o, p.Properties, p.Marking, merge)
		return err
	})
	return out, err
}

// ReplaceObjectAs replaces the properties of an object u may read.
func (s *Store) ReplaceObjectAs(ctx context.Context, u *models.User, typeRef, id string, sp ObjectSpec) (*models.Object, error) {
	if sp.Organization != nil {
		return nil, apperr.New(apperr.InvalidArgument, "an object's organization cannot change").
			WithDetails(apperr.Detail{Field: "organization", Reason: "immutable", Message: "organization is fixed"})
	}
	if sp.Properties == nil {
		sp.Properties = map[string]any{}
	}
	return s.PatchObjectAs(ctx, u, typeRef, id, ObjectPatch{Properties: sp.Properties, Marking: sp.Marking, Mode: ModeReplace})
}

// DeleteObjectAs deletes an object u may read, with its links.
func (s *Store) DeleteObjectAs(ctx context.Context, u *models.User, typeRef, id string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		o, err := s.readable(ctx, tx, u, typeRef, id)
		if err != nil {
			return err
		}
		return s.deleteObject(ctx, tx, o)
	})
}

// visible restricts q to objects u may read: the SQL form of the read
// rule (auth.ReadScope), the same definition CanRead checks in Go.
func (s *Store) visible(q *gorm.DB, u *models.User, table string) *gorm.DB {
	sc := s.levels.ReadScope(u)
	if sc.All {
		return q
	}
	cond, args := sc.SQL(table)
	return q.Where(cond, args...)
}

// RawFilter is one property filter as it arrives in a query string:
// Key is "<property>" (operator is) or "<property>.<operator>".
type RawFilter struct {
	Key   string
	Value string
}

// ParseFilters turns raw filters into conditions over the properties of
// ts (the operators and their semantics are those of form conditions).
func parseFilters(ts *typeState, raw []RawFilter, levels []string) ([]domain.Condition, error) {
	sc := domain.ConditionScope{HasTarget: true, TargetProperties: map[string]domain.PropertyType{}, Markings: levels}
	for _, p := range ts.props {
		sc.TargetProperties[p.Name] = p.Type.V
	}
	var conds []domain.Condition
	for _, rf := range raw {
		field := "filter." + rf.Key
		name, op, hasOp := strings.Cut(rf.Key, ".")
		if !hasOp {
			op = domain.OpIs
		}
		p, ok := ts.byKey[name]
		if !ok {
			return nil, apperr.New(apperr.InvalidArgument, "%s: object type %s has no property %q", field, ts.ot.Name, name).
				WithDetails(apperr.Detail{Field: field, Reason: "unknown_property", Message: "unknown property"})
		}
		c := domain.Condition{Path: domain.PathTargetPropertiesPrefix + name, Operator: op}
		if domain.NeedsValue(op) {
			t := p.Type.V
			if op == domain.OpIncludes && t.Base == domain.TypeArray && t.ElementType != nil {
				t = *t.ElementType
			}
			v, err := filterValue(t, rf.Value)
			if err != nil {
				return nil, apperr.New(apperr.InvalidArgument, "%s: %v", field, err).
					WithDetails(apperr.Detail{Field: field, Reason: "value", Message: err.Error()})
			}
			c.Value = v
		} else if rf.Value != "" && rf.Value != "true" {
			return nil, apperr.New(apperr.InvalidArgument, "%s: operator %s takes no value (leave it empty or true)", field, op).
				WithDetails(apperr.Detail{Field: field, Reason: "value", Message: "no value expected"})
		}
		if err := c.Validate(field, sc); err != nil {
			if ae, ok := apperr.As(err); ok {
				return nil, apperr.New(apperr.InvalidArgument, "%s", strings.Replace(ae.Message, field+".path: ", field+": ", 1)).WithDetails(ae.Details...)
			}
			return nil, err
		}
		conds = append(conds, c)
	}
	return conds, nil
}

// filterValue reads a query-string value as a value of t: text as is for
// string-like types, JSON otherwise (numbers, booleans, objects, arrays).
func filterValue(t domain.PropertyType, raw string) (any, error) {
	switch t.Base {
	case domain.TypeReference:
		return t.Normalize(raw), nil
	case domain.TypeString, domain.TypeDate, domain.TypeTimestamp,
		domain.TypeMarking, domain.TypeMediaReference:
		return raw, nil
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("value %q is not JSON of a %s", raw, t)
	}
	if dec.More() {
		return nil, fmt.Errorf("value %q is not a single JSON value", raw)
	}
	return v, nil
}

// ObjectQuery selects objects of one type.
type ObjectQuery struct {
	Filters []RawFilter
	// OrderBy is created_at (the default), updated_at or a property,
	// "-" first for descending (parseOrder).
	OrderBy string
	// PageToken is a page's NextPageToken (a keyset position), or an
	// offset token of the listing before keyset pages.
	PageToken string
	Offset    int
	Limit     int
}

// ObjectPage is a page of objects and the token of the next ("" at the
// end).
type ObjectPage struct {
	Items         []models.Object
	NextPageToken string
}

// ListObjects lists the objects of a type that u may read, in q's order
// (oldest first by default), matching every filter: one query over the
// property-value index (see queryObjects), the same on both dialects.
func (s *Store) ListObjects(ctx context.Context, u *models.User, typeRef string, q ObjectQuery) ([]models.Object, error) {
	p, err := s.listObjects(ctx, u, typeRef, q, false)
	return p.Items, err
}

// ListObjectsPage is ListObjects with the token of the next page.
func (s *Store) ListObjectsPage(ctx context.Context, u *models.User, typeRef string, q ObjectQuery) (ObjectPage, error) {
	return s.listObjects(ctx, u, typeRef, q, true)
}

func (s *Store) listObjects(ctx context.Context, u *models.User, typeRef string, q ObjectQuery, paged bool) (ObjectPage, error) {
	// Each filter is one probe in the statement: past the cap SQLite's
	// expression tree gives out (a 500), and any dialect's plan grows.
	if len(q.Filters) > defaults.MaxFilters {
		return ObjectPage{}, apperr.OverLimit("filter", defaults.MaxFilters, "filters", len(q.Filters))
	}
	ts, err := loadTypeState(ctx, s.db, typeRef)
	if err != nil {
		return ObjectPage{}, err
	}
	conds, err := parseFilters(ts, q.Filters, s.levels)
	if err != nil {
		return ObjectPage{}, err
	}
	ord, err := parseOrder(ts, q.OrderBy)
	if err != nil {
		return ObjectPage{}, err
	}
	after, offset, err := parseToken(ord, q.PageToken)
	if err != nil {
		return ObjectPage{}, err
	}
	fs := make([]valueFilter, len(conds))
	for i, c := range conds {
		fs[i] = s.sqlFilter(ts, c)
	}
	limit := q.Limit
	if paged {
		limit++
	}
	items, err := s.queryObjects(ctx, u, ts, fs, ord, after, q.Offset+offset, limit)
	if err != nil {
		return ObjectPage{}, err
	}
	p := ObjectPage{Items: items}
	if paged {
		p.Items, p.NextPageToken = nextPage(items, q.Limit, func(o *models.Object) cursor { return cursorAfter(ord, o) })
	}
	return p, nil
}

// SearchObjects lists up to limit objects of a type that u may read,
// oldest first, matching any of the filters (one query each, merged). A
// filter whose value is no value of its property's type (a search for
// "abc" in a number) matches nothing rather than refusing the search.
func (s *Store) SearchObjects(ctx context.Context, u *models.User, typeRef string, anyOf []RawFilter, limit int) ([]models.Object, error) {
	ts, err := loadTypeState(ctx, s.db, typeRef)
	if err != nil {
		return nil, err
	}
	var lists [][]models.Object
	for _, f := range anyOf {
		conds, err := parseFilters(ts, []RawFilter{f}, s.levels)
		if apperr.Is(err, apperr.InvalidArgument) {
			continue
		}
		if err != nil {
			return nil, err
		}
		objs, err := s.queryObjects(ctx, u, ts, []valueFilter{s.sqlFilter(ts, conds[0])}, order{}, nil, 0, limit)
		if err != nil {
			return nil, err
		}
		lists = append(lists, objs)
	}
	return mergeObjects(lists, limit), nil
}

// readableOfType is the query of ts's objects that u may read.
func (s *Store) readableOfType(ctx context.Context, u *models.User, ts *typeState) *gorm.DB {
	return s.visible(s.db.WithContext(ctx).Model(&models.Object{}).Where("object_type_id = ?", ts.ot.ID), u, "objects")
}
