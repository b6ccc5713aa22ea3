// Package engine is the action engine's logic: the four steps every action
// execution takes (prepare/validate, authorize, run the operation, notify),
// the execution records (written through execstore), and batch
// bookkeeping. The activities package exposes the steps to Temporal; the
// API calls Check directly for side-effect-free validation, so both paths
// run the same code.
package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/media"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications"
)

// Ontology is what the engine needs of the ontology store: what reads no
// transaction, and In, which binds one. The engine's reads and writes of
// objects and links go through the OntologyTx that In returns for the
// engine's transaction (a unit of work), so an operation's edits commit
// together with its execution record.
type Ontology interface {
	// ActionType returns the action type and its definition.
	ActionType(ctx context.Context, id string) (*ActionType, error)
	// CanRead is the store's read rule: whether u may read an object of
	// marking and organization.
	CanRead(u *models.User, marking, organization string) bool
	// In binds tx: the OntologyTx reads and writes inside it (the zero
	// Tx: outside any transaction, each call on its own, as a preview
	// reads).
	In(tx models.Tx) OntologyTx
}

// OntologyTx is the ontology bound to one transaction (Ontology.In).
//
// It is an alias of an interface literal rather than a named type so that
// ontology.TxOps, declared the same way, is the identical type: the store
// below the engine then implements Ontology as it is, without importing
// the engine, an adapter or a cast. Change both together (app's assembly
// stops building when they differ).
type OntologyTx = interface {
	// Object reads an object (nil, nil when absent).
	Object(ctx context.Context, id string) (*Object, error)
	// UpdateObject merges patch into the object's properties, validating
	// them as any write does, and returns the object after the write.
	UpdateObject(ctx context.Context, id string, patch map[string]any) (*Object, error)
	// CreateObject creates an object of objectTypeID.
	CreateObject(ctx context.Context, objectTypeID string, props map[string]any, marking, createdBy, organization string) (*Object, error)
	// UpdateObjectFor and CreateObjectFor are UpdateObject and
	// CreateObject on behalf of reader: a reference value written must
	// name an object reader may read, one it may not is refused exactly
	// as a missing one (what REST answers). For writes whose values the
	// engine has not checked with checkEnv (a function's edits).
	UpdateObjectFor(ctx context.Context, reader *models.User, id string, patch map[string]any) (*Object, error)
	CreateObjectFor(ctx context.Context, reader *models.User, objectTypeID string, props map[string]any, marking, createdBy, organization string) (*Object, error)
	// DeleteObject deletes an object and its links, and returns the
	// object and the links as they were (what recreating them needs).
	DeleteObject(ctx context.Context, id string) (*Object, []domain.Link, error)
	// CreateLink links source to target with linkTypeID, enforcing
	// cardinality, and returns the link id.
	CreateLink(ctx context.Context, linkTypeID, sourceID, targetID string) (string, error)
	// DeleteLink deletes a link (a function's unlink; a revert's undo).
	DeleteLink(ctx context.Context, id string) error
	// LockObject locks the object's row until the bound transaction ends
	// (Postgres; on SQLite the write transaction already excludes other
	// writers), so a check of its update time holds until the write that
	// relies on it.
	LockObject(ctx context.Context, id string) error
	// Link reads a link (nil, nil when absent); LinkBetween the link of a
	// type (id or name) from source to target.
	Link(ctx context.Context, id string) (*domain.Link, error)
	LinkBetween(ctx context.Context, linkType, sourceID, targetID string) (*domain.Link, error)
}

// ActionType and Object are the ontology's records as the engine sees
// them; the ontology store returns them.
type (
	ActionType = domain.ActionType
	Object     = domain.Object
)

// Deps are the engine's dependencies.
type Deps struct {
	DB       *gorm.DB
	Ontology Ontology
	// Kinds are the operation kinds the engine runs (nil: none;
	// engine/kinds.Registry has the built-in ones);
	// the ontology store must check definitions with the same registry.
	Kinds      *Kinds
	Levels     auth.Levels
	Log        *slog.Logger
	Registerer prometheus.Registerer
	// Channels deliver notification side effects (nil = in-app only:
	// every process has the inbox; app/app.go chooses the others).
	Channels []Channel
	// MaxRecipients bounds the recipients of one side effect (0 =
	// DefaultMaxRecipients); a side effect with more is recorded failed.
	MaxRecipients int
	// Media reads the users' WebDAV trees for media references (nil: a
	// reference to a WebDAV file names nothing); PublicURL is the
	// server's public base URL, which absolute references and the pins'
	// links use (media.go).
	Media     media.Store
	PublicURL string
	// Branches runs what-if executions (package whatif; nil: this process
	// refuses them).
	Branches Branches
	// Events records the object changes of a succeeded execution in the
	// transaction that commits them (the automations' outbox; nil: none).
	Events Events
}

// Events records a succeeded execution's edits inside tx, the transaction
// that commits them, so the record and the change commit together.
type Events interface {
	Record(ctx context.Context, tx *gorm.DB, ex *models.Execution, edits []models.Edit) error
}

// DefaultMaxRecipients is the default of Deps.MaxRecipients (and of the
// --max-recipients flag).
const DefaultMaxRecipients = defaults.MaxRecipients

// Engine runs action steps.
type Engine struct {
	db       *gorm.DB
	execs    *execstore.Store
	onto     Ontology
	kinds    *Kinds
	levels   auth.Levels
	log      *slog.Logger
	metrics  *metrics
	now      func() time.Time
	memo     memo
	waiters  settleWaiters
	channels map[string]Channel
	// maxRecipients bounds a side effect's recipients.
	maxRecipients int
	media         mediaFiles
	branches      Branches
	events        Events
}

// Log is the engine's logger, for the activities running its steps.
func (e *Engine) Log() *slog.Logger { return e.log }

// New returns an Engine.
func New(d Deps) *Engine {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Registerer == nil {
		d.Registerer = prometheus.NewRegistry()
	}
	if d.Kinds == nil {
		d.Kinds = NewKinds()
	}
	if d.Channels == nil {
		d.Channels = []Channel{notifications.InApp{}}
	}
	if d.Branches == nil {
		d.Branches = noBranches{}
	}
	if d.MaxRecipients <= 0 {
		d.MaxRecipients = DefaultMaxRecipients
	}
	e := &Engine{db: d.DB, execs: execstore.New(d.DB), onto: d.Ontology, kinds: d.Kinds, levels: d.Levels, log: d.Log,
		metrics: newMetrics(d.Registerer), now: func() time.Time { return time.Now().UTC() },
		channels: map[string]Channel{}, maxRecipients: d.MaxRecipients, media: newMediaFiles(d.Media, d.PublicURL), branches: d.Branches, events: d.Events}
	for _, ch := range d.Channels {
		e.channels[ch.Name()] = ch
	}
	return e
}

// checkEnv is the type system's environment for actor's parameters. An
// object reference resolves only to an object the actor may read: one it
// may not is reported absent, as the REST routes answer 404 for it, so a
// parameter (a link's other end, any reference input) cannot be used to
// probe for, or link to, objects outside the actor's clearance or
// organization.
func (e *Engine) checkEnv(ctx context.Context, actor *models.User) domain.CheckEnv {
	return domain.CheckEnv{
		Markings: e.levels,
		ResolveReference: func(objectTypeID, id string) (bool, error) {
			o, err := e.onto.In(models.Tx{}).Object(ctx, id)
			if err != nil || o == nil {
				return false, err
			}
			if objectTypeID != "" && o.ObjectTypeID != objectTypeID {
				return false, nil
			}
			return e.onto.CanRead(actor, o.Marking, o.Organization), nil
		},
	}
}
