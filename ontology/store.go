// Package ontology is Ontoflow's ontology store: object types and their
// properties, objects, link types and links, and action type definitions,
// on gorm (SQLite and Postgres alike). Every write is validated at
// definition time with the rules of package domain; object property writes
// are checked against the object type (unknown, required, type, unique).
//
// The action engine uses the store through engine.Ontology (ActionType,
// Object, CanRead, UpdateObject, CreateObject, DeleteObject,
// CreateLink); those methods take the engine's transaction so an action's
// edits commit together with its execution record.
//
// Deletion rules (see docs/ontology.md): deleting an object type cascades to
// its properties and is refused (409 DependentsExist) while objects, link
// types, action types or reference properties of other types depend on it;
// deleting a property removes its values from the objects of the type and
// is refused while action types use it or it is the primary key; deleting
// an action type is refused while a property's inline_edit_config names
// it; deleting a link type deletes its links and is refused while action
// types use it; deleting an object deletes its links.
package ontology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// PermWrite is the permission key that creating, changing and deleting
// ontology definitions and objects needs.
const PermWrite = "ontology:write"

// Store is the ontology store. It is safe for concurrent use and keeps no
// state of its own beyond the database handle.
type Store struct {
	db     *gorm.DB
	levels auth.Levels
	kinds  *domain.Kinds
	log    *slog.Logger
	// reader, when set (As), is the user a write is made for: a reference
	// it writes must name an object it may read.
	reader *models.User
	// secrets, when set (WithSecretPolicy), judges an action type's
	// references to secrets by their use policy.
	secrets SecretPolicy
	// media, when set (WithMedia), checks media references to WebDAV
	// files written for a reader.
	media MediaCheck
	// trigram: whether substring search has its trigram index (read once).
	trigram *lazyBool
}

// lazyBool is a fact about the database read once, when first needed.
type lazyBool struct {
	once sync.Once
	v    bool
}

func (l *lazyBool) get(f func() bool) bool {
	l.once.Do(func() { l.v = f() })
	return l.v
}

// As is the store writing on behalf of u: every reference value written
// through it (object properties, property defaults, action definitions)
// must name an object u may read, and one u may not read is answered
// exactly as a missing one. The REST routes write through it; the engine,
// which checks its actor's references itself, does not.
func (s *Store) As(u *models.User) *Store {
	c := *s
	c.reader = u
	return &c
}

// Over is the store reading and writing through tx (a caller's
// transaction): a what-if's function reads the branch that tx replayed,
// which the store's own connections do not see.
func (s *Store) Over(tx *gorm.DB) *Store {
	c := *s
	c.db = tx
	return &c
}

// NewStore returns a Store over db; markings are the configured marking
// levels (also the clearance levels), lowest first. Empty means
// auth.DefaultLevels. kinds are the operation kinds action types may use
// (the engine's registry, engine.Kinds.Domain); nil accepts none. Options
// add the checks that need other parts of the service: they are fixed at
// construction, so a store is never shared half configured.
func NewStore(db *gorm.DB, markings auth.Levels, kinds *domain.Kinds, opts ...Option) *Store {
	if len(markings) == 0 {
		markings = auth.DefaultLevels
	}
	s := &Store{db: db, levels: markings, kinds: kinds, log: slog.Default().With("component", "ontology"), trigram: &lazyBool{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Option configures a Store at construction.
type Option func(*Store)

// Levels are the configured marking levels.
func (s *Store) Levels() auth.Levels { return s.levels }

// DB is the store's database handle (tests, the engine's transactions).
func (s *Store) DB() *gorm.DB { return s.db }

// conn is tx when the caller runs a transaction, else the store's handle.
func (s *Store) conn(ctx context.Context, tx *gorm.DB) *gorm.DB {
	if tx != nil {
		return tx.WithContext(ctx)
	}
	return s.db.WithContext(ctx)
}

// inTx runs fn in tx when given, else in a new transaction.
func (s *Store) inTx(ctx context.Context, tx *gorm.DB, fn func(tx *gorm.DB) error) error {
	if tx != nil {
		return fn(tx.WithContext(ctx))
	}
	return s.db.WithContext(ctx).Transaction(fn)
}

func newID() string { return uuid.NewString() }

// isUnique reports whether err is a unique-constraint violation; models.Open
// translates both dialects' errors to gorm.ErrDuplicatedKey.
func isUnique(err error) bool { return errors.Is(err, gorm.ErrDuplicatedKey) }

// ontErr is a definition failure of an object type, property or link type:
// InvalidOntology naming the member.
func ontErr(field, reason, format string, args ...any) *apperr.Error {
	msg := fmt.Sprintf(format, args...)
	return apperr.New(apperr.InvalidOntology, "%s: %s", field, msg).
		WithDetails(apperr.Detail{Field: field, Reason: reason, Message: msg})
}

// dependents is the 409 refusing a delete while others depend on it; each
// dependant is one detail.
func dependents(what string, deps []apperr.Detail) *apperr.Error {
	names := make([]string, 0, len(deps))
	for _, d := range deps {
		names = append(names, d.Message)
	}
	return apperr.New(apperr.DependentsExist, "cannot delete %s: %s depend on it", what, strings.Join(names, "; ")).
		WithDetails(deps...)
}

// checkEnv is the value-check environment; tx resolves references inside
// the caller's transaction so objects created earlier in it count. With a
// reader (As) a reference to an object it may not read resolves as absent.
func (s *Store) checkEnv(ctx context.Context, tx *gorm.DB) domain.CheckEnv {
	return domain.CheckEnv{
		Markings: s.levels,
		ResolveReference: func(objectTypeID, id string) (bool, error) {
			if s.reader == nil {
				return s.objectExists(ctx, tx, objectTypeID, id)
			}
			o, err := s.loadObject(ctx, s.conn(ctx, tx), id)
			if err != nil || o == nil {
				return false, err
			}
			return (objectTypeID == "" || o.ObjectTypeID == objectTypeID) && s.CanRead(s.reader, o.Marking, o.Organization), nil
		},
		CheckMedia: s.mediaCheck(ctx),
	}
}

// CanRead reports whether u may read an object of marking and
// organization: auth's read rule (Levels.ReadScope) under the store's
// levels. The REST routes, the engine and the action log all use it.
func (s *Store) CanRead(u *models.User, marking, organization string) bool {
	return s.levels.CanRead(u, marking, organization)
}

// dbLookup is a domain.Lookup over the database.
type dbLookup struct {
	ctx context.Context
	db  *gorm.DB
}

func (l dbLookup) ObjectType(id string) (*domain.ObjectTypeInfo, error) {
	var ot models.ObjectType
	err := l.db.WithContext(l.ctx).Where("id = ?", id).Take(&ot).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up object type %s: %w", id, err)
	}
	props, err := loadProperties(l.ctx, l.db, ot.ID)
	if err != nil {
		return nil, err
	}
	return typeInfo(&ot, props), nil
}

func (l dbLookup) LinkType(id string) (*domain.LinkTypeInfo, error) {
	var lt models.LinkType
	err := l.db.WithContext(l.ctx).Where("id = ?", id).Take(&lt).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up link type %s: %w", id, err)
	}
	return &domain.LinkTypeInfo{ID: lt.ID, Name: lt.Name, SourceObjectTypeID: lt.SourceObjectTypeID,
		TargetObjectTypeID: lt.TargetObjectTypeID, Cardinality: lt.Cardinality}, nil
}

func typeInfo(ot *models.ObjectType, props []models.Property) *domain.ObjectTypeInfo {
	info := &domain.ObjectTypeInfo{ID: ot.ID, Name: ot.Name}
	for _, p := range props {
		info.Properties = append(info.Properties, propInfo(p))
	}
	return info
}

func propInfo(p models.Property) domain.PropertyInfo {
	return domain.PropertyInfo{Name: p.Name, Type: p.Type.V, Required: p.Required, Unique: p.Unique,
		HasDefault: p.DefaultValue.V != nil}
}

func loadProperties(ctx context.Context, db *gorm.DB, objectTypeID string) ([]models.Property, error) {
	var props []models.Property
	if err := db.WithContext(ctx).Where("object_type_id = ?", objectTypeID).
		Order("position, name").Find(&props).Error; err != nil {
		return nil, fmt.Errorf("load properties of %s: %w", objectTypeID, err)
	}
	return props, nil
}

// escapeLike is a case-insensitive search term's LIKE pattern (matched
// against lower-cased columns).
func escapeLike(s string) string { return likeContains(strings.ToLower(s)) }

// likeContains is the LIKE pattern (ESCAPE '\') of the strings that
// contain s.
func likeContains(s string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}

// searchClause matches q in the lower-cased columns (same on both dialects).
func searchClause(q *gorm.DB, term string, cols ...string) *gorm.DB {
	if term == "" {
		return q
	}
	like := escapeLike(term)
	parts := make([]string, len(cols))
	args := make([]any, len(cols))
	for i, c := range cols {
		parts[i] = "LOWER(" + c + `) LIKE ? ESCAPE '\'`
		args[i] = like
	}
	return q.Where("("+strings.Join(parts, " OR ")+")", args...)
}

// checkNotUUID refuses a name shaped like a UUID: paths take an id or a
// name, and such a name would be taken for an id.
func checkNotUUID(code apperr.Code, name string) error {
	if !domain.IsUUID(name) {
		return nil
	}
	return apperr.New(code, "name: %q looks like an id; names must not be UUIDs", name).
		WithDetails(apperr.Detail{Field: "name", Reason: "format", Message: "a name must not be a UUID"})
}

// findByRef loads the definition record T (an object, link or action type)
// by ref, its id (any case) or its name; a missing one is the apperr code
// notFound, naming what was looked for.
func findByRef[T any](ctx context.Context, db *gorm.DB, ref string, notFound apperr.Code, what string) (*T, error) {
	if ref == "" {
		return nil, apperr.New(notFound, "%s \"\" does not exist", what)
	}
	var rec T
	q := db.WithContext(ctx)
	if domain.IsUUID(ref) {
		q = q.Where("id = ?", strings.ToLower(ref))
	} else {
		q = q.Where("name = ?", ref)
	}
	err := q.Take(&rec).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.New(notFound, "%s %q does not exist", what, ref)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s %s: %w", what, ref, err)
	}
	return &rec, nil
}
