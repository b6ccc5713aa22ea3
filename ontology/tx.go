package ontology

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// TxOps is the store bound to one transaction, as In returns it: the
// reads and writes of a unit of work, each running in the bound
// transaction so that an action's edits commit with its execution record.
//
// It is an alias of an interface literal, not a named type, because
// engine.OntologyTx is declared the same way: identical literals are one
// type, so *Store implements engine.Ontology (In's result type matches)
// without this package importing the engine above it and without an
// adapter or a cast. Change both together; app's assembly stops
// building when they differ.
type TxOps = interface {
	Object(ctx context.Context, id string) (*domain.Object, error)
	UpdateObject(ctx context.Context, id string, patch map[string]any) (*domain.Object, error)
	CreateObject(ctx context.Context, objectTypeID string, props map[string]any, marking, createdBy, organization string) (*domain.Object, error)
	UpdateObjectFor(ctx context.Context, reader *models.User, id string, patch map[string]any) (*domain.Object, error)
	CreateObjectFor(ctx context.Context, reader *models.User, objectTypeID string, props map[string]any, marking, createdBy, organization string) (*domain.Object, error)
	DeleteObject(ctx context.Context, id string) (*domain.Object, []domain.Link, error)
	CreateLink(ctx context.Context, linkTypeID, sourceID, targetID string) (string, error)
	DeleteLink(ctx context.Context, id string) error
	LockObject(ctx context.Context, id string) error
	Link(ctx context.Context, id string) (*domain.Link, error)
	LinkBetween(ctx context.Context, linkType, sourceID, targetID string) (*domain.Link, error)
}

// RestoreOps are the restores bound to one transaction, as RestoresIn
// returns them (an alias of a literal for the reason TxOps is; revert's
// port, revert.RestoresTx, declares the same).
type RestoreOps = interface {
	RestoreObject(ctx context.Context, o domain.Object) error
	RestoreLink(ctx context.Context, l domain.Link) error
	SetUpdatedAt(ctx context.Context, id string, at time.Time) error
}

// Tx is the store with a transaction bound: each method is the Store
// method of its name called with that transaction (nil: none, each call
// on the store's own handle, as the Store methods take it).
type Tx struct {
	s  *Store
	tx *gorm.DB
}

// In binds tx: the returned TxOps reads and writes inside it.
func (s *Store) In(tx models.Tx) TxOps { return &Tx{s: s, tx: tx.Gorm()} }

// RestoresIn binds tx for the restores a revert makes.
func (s *Store) RestoresIn(tx *gorm.DB) RestoreOps { return &Tx{s: s, tx: tx} }

func (t *Tx) Object(ctx context.Context, id string) (*domain.Object, error) {
	return t.s.Object(ctx, t.tx, id)
}

func (t *Tx) UpdateObject(ctx context.Context, id string, patch map[string]any) (*domain.Object, error) {
	return t.s.UpdateObject(ctx, t.tx, id, patch)
}

func (t *Tx) CreateObject(ctx context.Context, objectTypeID string, props map[string]any, marking, createdBy, organization string) (*domain.Object, error) {
	return t.s.CreateObject(ctx, t.tx, objectTypeID, props, marking, createdBy, organization)
}

func (t *Tx) UpdateObjectFor(ctx context.Context, reader *models.User, id string, patch map[string]any) (*domain.Object, error) {
	return t.s.UpdateObjectFor(ctx, t.tx, reader, id, patch)
}

func (t *Tx) CreateObjectFor(ctx context.Context, reader *models.User, objectTypeID string, props map[string]any, marking, createdBy, organization string) (*domain.Object, error) {
	return t.s.CreateObjectFor(ctx, t.tx, reader, objectTypeID, props, marking, createdBy, organization)
}

func (t *Tx) DeleteObject(ctx context.Context, id string) (*domain.Object, []domain.Link, error) {
	return t.s.DeleteObject(ctx, t.tx, id)
}

func (t *Tx) CreateLink(ctx context.Context, linkTypeID, sourceID, targetID string) (string, error) {
	return t.s.CreateLink(ctx, t.tx, linkTypeID, sourceID, targetID)
}

func (t *Tx) DeleteLink(ctx context.Context, id string) error { return t.s.DeleteLink(ctx, t.tx, id) }

func (t *Tx) LockObject(ctx context.Context, id string) error { return t.s.LockObject(ctx, t.tx, id) }

// Link reads link id (nil, nil when absent).
func (t *Tx) Link(ctx context.Context, id string) (*domain.Link, error) {
	return t.s.linkWhere(ctx, t.tx, "id = ?", id)
}

// LinkBetween reads the link of linkType (an id or a name) from source to
// target (nil, nil when there is none).
func (t *Tx) LinkBetween(ctx context.Context, linkType, sourceID, targetID string) (*domain.Link, error) {
	return t.s.linkWhere(ctx, t.tx, "(link_type_id = ? OR link_type_id IN (SELECT id FROM link_types WHERE name = ?)) AND source_id = ? AND target_id = ?",
		linkType, linkType, sourceID, targetID)
}

func (t *Tx) RestoreObject(ctx context.Context, o domain.Object) error {
	return t.s.RestoreObject(ctx, t.tx, o)
}

func (t *Tx) RestoreLink(ctx context.Context, l domain.Link) error {
	return t.s.RestoreLink(ctx, t.tx, l)
}

func (t *Tx) SetUpdatedAt(ctx context.Context, id string, at time.Time) error {
	return t.s.SetUpdatedAt(ctx, t.tx, id, at)
}
