package engine

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// Kind is an operation kind: the definition-time checks the ontology
// store runs (domain.OperationKind), and what the engine does with an
// action of the kind. Each kind lives in its own package under
// engine/kinds/ with its own config type, and is registered at assembly
// (engine/kinds.Builtin, app/app.go); nothing in the engine core knows any
// kind by name. See docs/actions.md,
// "Adding an operation kind".
type Kind interface {
	domain.OperationKind
	// Preview describes the edits Apply would make, without writing (the
	// validate route's preview; what-if uses it too). op.Tx is nil.
	Preview(ctx context.Context, op *Op) ([]models.Edit, error)
	// Apply makes the edits inside op.Tx, the transaction that also
	// records the execution as succeeded, so they commit exactly once. The
	// edits it returns are recorded on the execution and must hold what
	// Invert needs (see models.Edit). For a what-if op.Tx holds the
	// branch's replayed edits and is rolled back (package whatif): Apply must
	// write only through op.Tx, which the contract already asks.
	Apply(ctx context.Context, op *Op) (*Outcome, error)
	// Invert returns the edits that undo ed, an edit this kind's Apply
	// recorded (revert applies them). An edit that cannot be undone is an
	// error.
	Invert(ed models.Edit) ([]models.Edit, error)
}

// EffectKind is implemented by kinds whose work leaves the process (a
// webhook call, a function run with network access). Their Effect runs as
// its own step before Apply — a regular Temporal activity with the
// options EffectOptions returns, outside any database transaction, so it
// never holds the execution's row lock (on SQLite the database's write
// lock) across network I/O — and may run more than once: the key
// (the execution id) is the same on every attempt, for the receiver to
// drop duplicates. Its JSON result reaches Apply as op.Effect, which
// records the outcome and any edits together with the execution, exactly
// once. An effect is never run for a preview.
type EffectKind interface {
	Kind
	Effect(ctx context.Context, op *Op, key string) (json.RawMessage, error)
	// EffectOptions are the step's options for op (its config may set a
	// timeout or attempts). They are computed by the validate step and
	// recorded in its result, so the workflow stays deterministic.
	EffectOptions(op *Op) EffectOptions
}

// EffectPreviewer is implemented by effect kinds that can describe their
// effect without performing it, for what-if: a webhook returns the request
// it would send (secrets redacted, nothing sent), a function runs with
// network refused. The result reaches Apply as op.Effect exactly as an
// Effect's would, inside a transaction what-if rolls back, so Apply must
// accept it (a previewed webhook has no response to write back). An effect
// kind without it is previewed as having no effect.
type EffectPreviewer interface {
	PreviewEffect(ctx context.Context, op *Op) (json.RawMessage, error)
}

// EffectOptions are the activity options of an effect step.
type EffectOptions struct {
	// StartToClose bounds one attempt.
	StartToClose time.Duration
	// Heartbeat, when set, is the heartbeat timeout (the effect calls
	// activity.RecordHeartbeat while it waits).
	Heartbeat time.Duration
	// MaxAttempts bounds the attempts (0: the workflow's default).
	MaxAttempts int32
	// InitialInterval and MaxInterval shape the exponential backoff.
	InitialInterval, MaxInterval time.Duration
	// Local runs the effect as a local activity (in the worker, no task
	// queue round trip): for effects that stay in the process, such as a
	// function without network access. Still its own step in the history.
	Local bool `json:",omitempty"`
}

// Op is what a kind works on: one action execution (or a preview of one).
type Op struct {
	// Action is the action type, Config its operation config decoded into
	// the kind's type (what its NewConfig returns).
	Action *ActionType
	Config any
	// Actor runs the action; Target is the target object, read inside Tx
	// when applying (nil when the kind has none).
	Actor  *models.User
	Target *Object
	// Params are the materialized, type-checked parameters.
	Params map[string]any
	// ExecutionID is the execution ("" in a preview).
	ExecutionID string
	// Effect is the result of an EffectKind's effect step (Apply only).
	Effect json.RawMessage
	// Ontology reads and writes the ontology; with Tx (nil in a preview)
	// inside the execution's transaction.
	Ontology Ontology
	Tx       models.Tx
	// media reads the actor's files (a function's ctx.media; media.go).
	media mediaFiles
}

// Kinds is the registry of operation kinds the engine runs.
type Kinds struct {
	domain *domain.Kinds
	byName map[string]Kind
}

// NewKinds registers ks (a name registered twice panics).
func NewKinds(ks ...Kind) *Kinds {
	r := &Kinds{byName: map[string]Kind{}}
	dk := make([]domain.OperationKind, 0, len(ks))
	for _, k := range ks {
		dk = append(dk, k)
		r.byName[k.Name()] = k
	}
	r.domain = domain.NewKinds(dk...)
	return r
}

// ReplaceKinds returns base with each kind of with put in place of the
// base kind of the same name, or appended when base has none (assembly
// swaps a built-in kind for one holding its dependencies this way).
func ReplaceKinds(base []Kind, with ...Kind) []Kind {
	out := append([]Kind(nil), base...)
	for _, k := range with {
		i := slices.IndexFunc(out, func(b Kind) bool { return b.Name() == k.Name() })
		if i < 0 {
			out = append(out, k)
			continue
		}
		out[i] = k
	}
	return out
}

// Domain is the definition-time view of the registry, for the ontology
// store.
func (r *Kinds) Domain() *domain.Kinds { return r.domain }

// Get returns the kind called name.
func (r *Kinds) Get(name string) (Kind, bool) {
	k, ok := r.byName[name]
	return k, ok
}

// op returns the kind of at and the Op for it, its config decoded. A kind
// that is not registered (an action type stored by a build that had it)
// is OperationNotSupported.
func (e *Engine) op(at *ActionType, actor *models.User, target *Object, params map[string]any) (Kind, *Op, error) {
	k, ok := e.kinds.Get(at.OperationKind)
	if !ok {
		return nil, nil, NotSupported(at.OperationKind)
	}
	cfg := k.NewConfig()
	if err := domain.DecodeConfig("config.operation", at.Config.Operation, cfg); err != nil {
		return nil, nil, apperr.New(apperr.Internal, "the stored %s config of action %s no longer decodes: %v", at.OperationKind, at.Name, err)
	}
	return k, &Op{Action: at, Config: cfg, Actor: actor, Target: target, Params: params, Ontology: e.onto, media: e.media}, nil
}

// NotSupported answers an operation this build cannot run.
func NotSupported(kind string) error {
	return apperr.New(apperr.OperationNotSupported, "operation %s is not available in this release", kind)
}

// TimePtr is t as an edit records it (nil for the zero time).
func TimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Pick returns props restricted to keys (absent ones as nil): the before
// and after values an edit records.
func Pick(props, keys map[string]any) map[string]any {
	out := map[string]any{}
	for k := range keys {
		out[k] = props[k]
	}
	return out
}

// MappingRefs are the properties a mapping config writes (the References
// of the kinds configured by domain.MappingConfig).
func MappingRefs(cfg *domain.MappingConfig) domain.References {
	var r domain.References
	for _, m := range cfg.PropertyMappings {
		r.Properties = append(r.Properties, m.Property)
	}
	for k := range cfg.StaticPatch {
		r.Properties = append(r.Properties, k)
	}
	return r
}
