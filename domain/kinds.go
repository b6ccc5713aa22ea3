package domain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ontoflow/ontoflow/channelspec"
)

// OperationKind is the definition-time half of an operation kind: what
// the ontology store needs to accept or refuse an action type of the kind,
// without knowing how the kind runs. The engine's Kind embeds it and adds
// preview, apply and inversion; implementations live one package a kind
// under engine/kinds/ (engine/kinds/<kind>), are listed by
// engine/kinds.Builtin and registered at assembly (app/app.go), so the
// store receives them as a *Kinds at construction.
type OperationKind interface {
	// Name is the kind's operation_kind value, e.g. "update_object".
	Name() string
	// NeedsObjectType reports whether an action of the kind must name an
	// object type (object_type_id).
	NeedsObjectType() bool
	// HasTarget reports whether an action of the kind runs on a target
	// object, given its object type ("" = none).
	HasTarget(objectTypeID string) bool
	// NewConfig returns a pointer to the kind's zero config; the
	// definition's config.operation is decoded into it strictly (unknown
	// members refused, numbers as json.Number).
	NewConfig() any
	// CheckConfig performs the kind's definition-time checks of cfg (as
	// NewConfig returned it, decoded), failing with InvalidDefinition
	// errors that name the member (s.Field prefixes every field). ctx is
	// the request's: a check that reads (a function's reference) stops
	// with it.
	CheckConfig(ctx context.Context, s *KindScope, cfg any) error
	// References lists the parts of the ontology cfg depends on, so the
	// store can refuse deleting them while the action type exists.
	References(cfg any) References
}

// RedactedValue replaces a value that may be a secret wherever it is
// shown to someone who may not see it.
const RedactedValue = "***"

// SecretRedactor is implemented by kinds whose config carries secrets
// (e.g. webhook headers): RedactSecrets replaces them in cfg in place
// before the config is shown to a caller who may not change it.
type SecretRedactor interface {
	RedactSecrets(cfg any, redacted string)
}

// TypeRefs resolves a type that a definition names by id or by name to
// its id; ok is false when no type has that id or name.
type TypeRefs interface {
	ObjectTypeID(ref string) (id string, ok bool, err error)
	LinkTypeID(ref string) (id string, ok bool, err error)
}

// RefResolver is implemented by kinds whose config names ontology types
// (e.g. create_link's link_type_id): ResolveRefs replaces, in cfg in
// place, each type given by name with its id, and leaves one that names
// nothing as given for CheckConfig to refuse.
type RefResolver interface {
	ResolveRefs(cfg any, refs TypeRefs) error
}

// References are the parts of the ontology an operation config uses.
type References struct {
	// Properties of the action's object type that the config reads or
	// writes.
	Properties []string
	// LinkTypeIDs the config links through.
	LinkTypeIDs []string
}

// Kinds is the registry of operation kinds, in registration order.
type Kinds struct {
	byName map[string]OperationKind
	names  []string
	// channels are the notification channels definitions may name (nil:
	// the built-in ones); see WithChannels.
	channels *channelspec.Registry
}

// NewKinds registers ks; a second kind of the same name panics (an
// assembly error).
func NewKinds(ks ...OperationKind) *Kinds {
	r := &Kinds{byName: map[string]OperationKind{}}
	for _, k := range ks {
		if _, dup := r.byName[k.Name()]; dup {
			panic(fmt.Sprintf("operation kind %q registered twice", k.Name()))
		}
		r.byName[k.Name()] = k
		r.names = append(r.names, k.Name())
	}
	return r
}

// Get returns the kind called name.
func (r *Kinds) Get(name string) (OperationKind, bool) {
	if r == nil {
		return nil, false
	}
	k, ok := r.byName[name]
	return k, ok
}

// Names are the registered kinds' names, in registration order.
func (r *Kinds) Names() []string {
	if r == nil {
		return nil
	}
	return append([]string(nil), r.names...)
}

// HasTarget reports whether d runs on a target object (false for a kind
// that is not registered).
func (r *Kinds) HasTarget(d ActionDefinition) bool {
	k, ok := r.Get(d.OperationKind)
	return ok && k.HasTarget(d.ObjectTypeID)
}

// Config decodes d's operation config into its kind's type. The
// definition was checked when stored; an error here means the kind or its
// config changed since.
func (r *Kinds) Config(d ActionDefinition) (OperationKind, any, error) {
	k, ok := r.Get(d.OperationKind)
	if !ok {
		return nil, nil, fmt.Errorf("operation kind %q is not registered", d.OperationKind)
	}
	cfg := k.NewConfig()
	if err := DecodeConfig("config.operation", d.Config.Operation, cfg); err != nil {
		return nil, nil, fmt.Errorf("decode the %s config of action %s: %w", d.OperationKind, d.Name, err)
	}
	return k, cfg, nil
}

// References are the parts of the ontology d's operation uses (none when
// its config cannot be decoded).
func (r *Kinds) References(d ActionDefinition) References {
	k, cfg, err := r.Config(d)
	if err != nil {
		return References{}
	}
	return k.References(cfg)
}

// RedactSecrets returns d's operation config with its secrets replaced by
// redacted (unchanged when its kind carries none). A config that cannot be
// decoded (its kind is not registered) is withheld: null.
func (r *Kinds) RedactSecrets(d ActionDefinition, redacted string) json.RawMessage {
	k, cfg, err := r.Config(d)
	if err != nil {
		return nil
	}
	red, ok := k.(SecretRedactor)
	if !ok {
		return d.Config.Operation
	}
	red.RedactSecrets(cfg, redacted)
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil
	}
	return b
}

// ResolveRefs replaces every type d names by name (reference inputs'
// object types, at any depth of arrays, and what its kind's config names)
// with its id, so a definition is stored with ids whichever the client
// wrote. A name that matches no type stays as given: the definition
// check refuses it naming the member. A config that does not decode is
// left for the check too.
func (r *Kinds) ResolveRefs(d *ActionDefinition, refs TypeRefs) error {
	for i := range d.Inputs {
		if err := ResolveTypeRefs(&d.Inputs[i].Type, refs); err != nil {
			return err
		}
	}
	k, cfg, err := r.Config(*d)
	if err != nil {
		return nil
	}
	rr, ok := k.(RefResolver)
	if !ok {
		return nil
	}
	if err := rr.ResolveRefs(cfg, refs); err != nil {
		return err
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode the %s config of action %s: %w", d.OperationKind, d.Name, err)
	}
	d.Config.Operation = b
	return nil
}

// ResolveTypeRefs replaces a reference type's object type name with its
// id (a name that matches nothing stays).
func ResolveTypeRefs(t *PropertyType, refs TypeRefs) error {
	for ; t != nil; t = t.ElementType {
		if t.ObjectTypeID == "" || IsUUID(t.ObjectTypeID) {
			continue
		}
		id, ok, err := refs.ObjectTypeID(t.ObjectTypeID)
		if err != nil {
			return err
		}
		if ok {
			t.ObjectTypeID = id
		}
	}
	return nil
}

// Canonical re-encodes d's operation config from its kind's type, so
// what is stored and shown has one form whatever the client's spelling.
func (r *Kinds) Canonical(d ActionDefinition) (json.RawMessage, error) {
	_, cfg, err := r.Config(d)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode the %s config of action %s: %w", d.OperationKind, d.Name, err)
	}
	return b, nil
}

// DecodeConfig decodes raw (absent or null: an empty object) into cfg
// strictly: numbers as json.Number, and a member cfg's type does not have
// refused as InvalidDefinition "<field>.<member>" reason not_allowed.
func DecodeConfig(field string, raw json.RawMessage, cfg any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return defErr(field, "type", "the operation config must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	err := dec.Decode(cfg)
	if err == nil {
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return defErr(field, "type", "the operation config must be one JSON object")
		}
		return nil
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return defErr(field+"."+name, "not_allowed", "%s is not used by this kind of action", clip(name))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return defErr(field+"."+te.Field, "type", "%s must be %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	return defErr(field, "format", "invalid operation config: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	}
	return "a number"
}

// KindScope is what a kind's definition-time checks see of the action
// type being defined.
type KindScope struct {
	// Field is the config's member path ("config.operation").
	Field string
	// Definition is the whole action type.
	Definition ActionDefinition
	// ObjectType is the action's object type (nil when it names none).
	ObjectType *ObjectTypeInfo
	// Inputs are the action's inputs by name.
	Inputs map[string]InputField
	// Lookup reads the surrounding ontology.
	Lookup Lookup
	// Env checks fixed values.
	Env CheckEnv
}

// Err is an InvalidDefinition failure of member s.Field+member (member ""
// names the config itself; otherwise it starts with "." or "[").
func (s *KindScope) Err(member, reason, format string, args ...any) error {
	return defErr(s.Field+member, reason, format, args...)
}

// Clip shortens a client-supplied value for an error message.
func Clip(v string) string { return clip(v) }

// kindNames lists the kinds for the unknown_kind message, sorted.
func kindNames(r *Kinds) string {
	ns := r.Names()
	sort.Strings(ns)
	return strings.Join(ns, ", ")
}
