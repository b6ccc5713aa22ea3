package domain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/ontoflow/ontoflow/apperr"
)

// Names of the operation kinds Ontoflow ships (their implementations are
// in package engine, registered at assembly; see Kinds).
const (
	KindUpdateObject   = "update_object"
	KindCreateObject   = "create_object"
	KindCreateLink     = "create_link"
	KindDeleteObject   = "delete_object"
	KindInvokeFunction = "invoke_function"
	KindInvokeWebhook  = "invoke_webhook"
)

// Link cardinalities.
const (
	OneToOne   = "one_to_one"
	OneToMany  = "one_to_many"
	ManyToOne  = "many_to_one"
	ManyToMany = "many_to_many"
)

// Cardinalities lists every link cardinality.
var Cardinalities = []string{OneToOne, OneToMany, ManyToOne, ManyToMany}

// Link sides (create_link target_side).
const (
	SideSource = "source"
	SideTarget = "target"
)

// Severities of notifications. (The channels a side effect may name are
// registered: Kinds.Channels.)
var Severities = []string{"info", "success", "warning", "error", "critical"}

// Webhook methods.
var WebhookMethods = []string{"POST", "GET", "PUT", "PATCH", "DELETE"}

// Limits of a definition.
const (
	MaxInputs        = 200
	MaxNameLength    = 128
	MaxFunctionBytes = 256 << 10
)

var (
	// NameRE is the syntax of object type, link type and action type names.
	NameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`)
	// identRE is the syntax of property names, input names and section ids
	// (they appear in condition paths, so no dots).
	identRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	runtimeRE = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,31}$`)
	semverRE  = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	tokenRE   = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
	permRE    = regexp.MustCompile(`^[^\s]{1,128}$`)
)

// IsIdent reports whether s is a valid property or input name.
func IsIdent(s string) bool { return identRE.MatchString(s) }

// InputField is one parameter of an action type.
type InputField struct {
	Name        string       `json:"name"`
	DisplayName string       `json:"display_name,omitempty"`
	Description string       `json:"description,omitempty"`
	Type        PropertyType `json:"type"`
	Required    bool         `json:"required,omitempty"`
	// DefaultValue is used when the parameter is not supplied (nil: none).
	DefaultValue any `json:"default_value,omitempty"`
}

// PropertyMapping sets one property of the object from an input or from a
// fixed value (exactly one of Input and Value).
type PropertyMapping struct {
	Property string `json:"property"`
	Input    string `json:"input,omitempty"`
	Value    any    `json:"value,omitempty"`
}

// InlineFunction is function source run by a runtime.
type InlineFunction struct {
	Runtime string `json:"runtime"`
	Source  string `json:"source"`
}

// MappingConfig is the operation config of update_object and create_object:
// property values from inputs or fixed values, and a static patch.
type MappingConfig struct {
	PropertyMappings []PropertyMapping `json:"property_mappings,omitempty"`
	StaticPatch      map[string]any    `json:"static_patch,omitempty"`
}

// Properties builds the property values of cfg for params: the static
// patch, then each mapping (an input that has no value sets nothing).
func (cfg MappingConfig) Properties(params map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range cfg.StaticPatch {
		out[k] = v
	}
	for _, m := range cfg.PropertyMappings {
		if m.Input == "" {
			out[m.Property] = m.Value
			continue
		}
		if v, ok := params[m.Input]; ok {
			out[m.Property] = v
		}
	}
	return out
}

// FunctionRef names the function an invoke_function action runs: exactly
// one of Inline, PackageID, or PackageName + Version (AutoUpgrade: also
// accept newer compatible versions, same major).
type FunctionRef struct {
	Inline      *InlineFunction `json:"inline,omitempty"`
	PackageID   string          `json:"package_id,omitempty"`
	PackageName string          `json:"package_name,omitempty"`
	Version     string          `json:"version,omitempty"`
	AutoUpgrade bool            `json:"auto_upgrade,omitempty"`
}

// NotificationSideEffect is a notification sent after a successful run.
// Title and Body are templates rendered by the engine.
type NotificationSideEffect struct {
	Title                  string         `json:"title"`
	Body                   string         `json:"body,omitempty"`
	Severity               string         `json:"severity,omitempty"`
	Category               string         `json:"category,omitempty"`
	Channels               []string       `json:"channels,omitempty"`
	UserIDs                []string       `json:"user_ids,omitempty"`
	UserIDInputName        string         `json:"user_id_input_name,omitempty"`
	TargetUserPropertyName string         `json:"target_user_property_name,omitempty"`
	SendToActor            bool           `json:"send_to_actor,omitempty"`
	SendToTargetCreator    bool           `json:"send_to_target_creator,omitempty"`
	Broadcast              bool           `json:"broadcast,omitempty"`
	Metadata               map[string]any `json:"metadata,omitempty"`
	// Destinations are the side effect's shared destinations by channel,
	// for the channels that post to one (channelspec.Spec.Destination):
	// secret references ({{ secrets.NAME }}), since the URL itself is the
	// credential. In JSON each is the member its channel names
	// ("slack_webhook"; channels.go).
	Destinations map[string]string `json:"-"`
}

// secretRefRE is one whole secret reference (package secrets parses them;
// domain sits below it).
var secretRefRE = regexp.MustCompile(`^\{\{\s*secrets\.[A-Za-z][A-Za-z0-9_]{0,63}\s*\}\}$`)

// EffectiveChannels are the channels, in_app when none is named.
func (n NotificationSideEffect) EffectiveChannels() []string {
	if len(n.Channels) == 0 {
		return []string{"in_app"}
	}
	return n.Channels
}

// EffectiveSeverity is the severity, info when none is named.
func (n NotificationSideEffect) EffectiveSeverity() string {
	if n.Severity == "" {
		return "info"
	}
	return n.Severity
}

// ActionConfig is the config envelope of an action type.
type ActionConfig struct {
	// Operation is the config of the action's operation kind, decoded by
	// the kind into its own type (see OperationKind.NewConfig).
	Operation               json.RawMessage          `json:"operation"`
	NotificationSideEffects []NotificationSideEffect `json:"notification_side_effects,omitempty"`
	// RevertNotificationSideEffects are delivered after a revert of one of
	// the action's executions succeeds. A revert sends nothing without
	// them: the action's own side effects announce a change, not its undo.
	RevertNotificationSideEffects []NotificationSideEffect `json:"revert_notification_side_effects,omitempty"`
	// AllowRevert (default true) lets executions of the action be
	// reverted (POST /executions/{id}/revert).
	AllowRevert *bool `json:"allow_revert,omitempty"`
}

// SideEffects are the notification side effects of an execution: the
// revert ones for a revert, else the action's own.
func (c ActionConfig) SideEffects(revert bool) []NotificationSideEffect {
	if revert {
		return c.RevertNotificationSideEffects
	}
	return c.NotificationSideEffects
}

// Revertible reports whether executions of the action may be reverted.
func (c ActionConfig) Revertible() bool { return c.AllowRevert == nil || *c.AllowRevert }

// Policy is an action type's authorization policy; every member that is
// set must hold (evaluated by the engine).
type Policy struct {
	PermissionKey          string   `json:"permission_key,omitempty"`
	RequiredPermissionKeys []string `json:"required_permission_keys,omitempty"`
	AnyRole                []string `json:"any_role,omitempty"`
	AllRoles               []string `json:"all_roles,omitempty"`
	// AnyGroup admits members of one of these groups (models.User.Groups:
	// the identity provider's, or local groups set on service users).
	AnyGroup             []string       `json:"any_group,omitempty"`
	AttributeEquals      map[string]any `json:"attribute_equals,omitempty"`
	AllowedMarkings      []string       `json:"allowed_markings,omitempty"`
	MinimumClearance     string         `json:"minimum_clearance,omitempty"`
	DenyGuestSessions    bool           `json:"deny_guest_sessions,omitempty"`
	ConfirmationRequired bool           `json:"confirmation_required,omitempty"`
}

// ActionDefinition is everything of an action type that definition-time
// validation looks at.
type ActionDefinition struct {
	Name          string       `json:"name"`
	DisplayName   string       `json:"display_name,omitempty"`
	Description   string       `json:"description,omitempty"`
	ObjectTypeID  string       `json:"object_type_id,omitempty"`
	OperationKind string       `json:"operation_kind"`
	Inputs        []InputField `json:"inputs,omitempty"`
	FormSchema    FormSchema   `json:"form_schema"`
	Config        ActionConfig `json:"config"`
	Policy        Policy       `json:"policy"`
}

// PropertyMappings are the property mappings of an action whose config is
// a MappingConfig (update_object, create_object; inline edits use them),
// nil for another kind's config.
func (d ActionDefinition) PropertyMappings() []PropertyMapping {
	var cfg MappingConfig
	if DecodeConfig("config.operation", d.Config.Operation, &cfg) != nil {
		return nil
	}
	return cfg.PropertyMappings
}

// Input returns the input called name.
func (d ActionDefinition) Input(name string) (InputField, bool) {
	for _, in := range d.Inputs {
		if in.Name == name {
			return in, true
		}
	}
	return InputField{}, false
}

// PropertyInfo is what definition checks know of a property.
type PropertyInfo struct {
	Name       string       `json:"name"`
	Type       PropertyType `json:"type"`
	Required   bool         `json:"required"`
	Unique     bool         `json:"unique"`
	HasDefault bool         `json:"has_default"`
}

// ObjectTypeInfo is what definition checks know of an object type.
type ObjectTypeInfo struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Properties []PropertyInfo `json:"properties"`
}

// Property returns the property called name.
func (o *ObjectTypeInfo) Property(name string) (PropertyInfo, bool) {
	for _, p := range o.Properties {
		if p.Name == name {
			return p, true
		}
	}
	return PropertyInfo{}, false
}

// LinkTypeInfo is what definition checks know of a link type.
type LinkTypeInfo struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	SourceObjectTypeID string `json:"source_object_type_id"`
	TargetObjectTypeID string `json:"target_object_type_id"`
	Cardinality        string `json:"cardinality"`
}

// Lookup gives definition checks the surrounding ontology. Both methods
// return nil, nil when the id names nothing.
type Lookup interface {
	ObjectType(id string) (*ObjectTypeInfo, error)
	LinkType(id string) (*LinkTypeInfo, error)
}

// StaticLookup is a Lookup over maps (tests, previews).
type StaticLookup struct {
	ObjectTypes map[string]ObjectTypeInfo
	LinkTypes   map[string]LinkTypeInfo
}

// ObjectType implements Lookup.
func (l StaticLookup) ObjectType(id string) (*ObjectTypeInfo, error) {
	if o, ok := l.ObjectTypes[id]; ok {
		return &o, nil
	}
	return nil, nil
}

// LinkType implements Lookup.
func (l StaticLookup) LinkType(id string) (*LinkTypeInfo, error) {
	if o, ok := l.LinkTypes[id]; ok {
		return &o, nil
	}
	return nil, nil
}

// ValidateDefinition performs every definition-time check of an action
// type and returns the first failure as an *apperr.Error with code
// InvalidDefinition whose message and Detail.Field name the member (e.g.
// "inputs[2].default_value", "form_schema.sections[0].parameters[1]").
// Errors of lookup are returned as they are. env gives the configured
// markings (also the clearance levels) and, optionally, a reference
// resolver for default and fixed values.
func ValidateDefinition(ctx context.Context, d ActionDefinition, kinds *Kinds, lookup Lookup, env CheckEnv) error {
	v := &defValidator{d: d, kinds: kinds, lookup: lookup, env: env}
	return v.run(ctx)
}

type defValidator struct {
	d      ActionDefinition
	kinds  *Kinds
	kind   OperationKind
	lookup Lookup
	env    CheckEnv
	ot     *ObjectTypeInfo
	inputs map[string]InputField
}

func (v *defValidator) run(ctx context.Context) error {
	d := v.d
	if d.Name == "" {
		return defErr("name", "required", "an action type needs a name")
	}
	if !NameRE.MatchString(d.Name) {
		return defErr("name", "format", "name %q must match %s", clip(d.Name), NameRE)
	}
	if len(d.DisplayName) > 256 {
		return defErr("display_name", "too_long", "display_name is at most 256 characters")
	}
	kind, ok := v.kinds.Get(d.OperationKind)
	if !ok {
		return defErr("operation_kind", "unknown_kind", "unknown operation_kind %q (expected one of %s)", clip(d.OperationKind), kindNames(v.kinds))
	}
	v.kind = kind
	if d.ObjectTypeID == "" {
		if kind.NeedsObjectType() {
			return defErr("object_type_id", "required", "%s actions need an object_type_id", d.OperationKind)
		}
	} else {
		ot, err := v.lookup.ObjectType(d.ObjectTypeID)
		if err != nil {
			return err
		}
		if ot == nil {
			return defErr("object_type_id", "not_found", "object type %q does not exist", clip(d.ObjectTypeID))
		}
		v.ot = ot
	}
	if err := v.checkInputs(); err != nil {
		return err
	}
	sc := v.scope()
	if err := d.FormSchema.Validate("form_schema", d.Inputs, sc, v.env); err != nil {
		return err
	}
	if err := v.checkOperation(ctx); err != nil {
		return err
	}
	for i, n := range d.Config.NotificationSideEffects {
		if err := v.checkNotification(fmt.Sprintf("config.notification_side_effects[%d]", i), n); err != nil {
			return err
		}
	}
	for i, n := range d.Config.RevertNotificationSideEffects {
		if err := v.checkNotification(fmt.Sprintf("config.revert_notification_side_effects[%d]", i), n); err != nil {
			return err
		}
	}
	return ValidatePolicy("policy", d.Policy, v.env.markings())
}

// scope is the condition scope of the action.
func (v *defValidator) scope() ConditionScope {
	sc := ConditionScope{Inputs: map[string]PropertyType{}, HasTarget: v.kind != nil && v.kind.HasTarget(v.d.ObjectTypeID) && v.ot != nil, Markings: v.env.Markings}
	for _, in := range v.d.Inputs {
		sc.Inputs[in.Name] = in.Type
	}
	if v.ot != nil {
		sc.TargetProperties = map[string]PropertyType{}
		for _, p := range v.ot.Properties {
			sc.TargetProperties[p.Name] = p.Type
		}
	}
	return sc
}

// Scope is the condition scope of d (for validating conditions outside a
// full definition check); hasTarget is its kind's answer for d, ot may be
// nil.
func Scope(d ActionDefinition, hasTarget bool, ot *ObjectTypeInfo, markings []string) ConditionScope {
	v := &defValidator{d: d, ot: ot, env: CheckEnv{Markings: markings}}
	sc := v.scope()
	sc.HasTarget = hasTarget && ot != nil
	return sc
}

func (v *defValidator) checkTypeRefs(field string, t PropertyType) error {
	for _, id := range t.References() {
		ot, err := v.lookup.ObjectType(id)
		if err != nil {
			return err
		}
		if ot == nil {
			return defErr(field+".object_type_id", "not_found", "referenced object type %q does not exist", id)
		}
	}
	return nil
}

func (v *defValidator) checkInputs() error {
	if len(v.d.Inputs) > MaxInputs {
		return defErr("inputs", "too_many", "an action type has at most %d inputs", MaxInputs)
	}
	v.inputs = map[string]InputField{}
	for i, in := range v.d.Inputs {
		f := fmt.Sprintf("inputs[%d]", i)
		if in.Name == "" {
			return defErr(f+".name", "required", "an input needs a name")
		}
		if !identRE.MatchString(in.Name) {
			return defErr(f+".name", "format", "input name %q must match %s", clip(in.Name), identRE)
		}
		if _, dup := v.inputs[in.Name]; dup {
			return defErr(f+".name", "duplicate", "duplicate input %q", in.Name)
		}
		v.inputs[in.Name] = in
		if err := in.Type.Validate(f + ".type"); err != nil {
			return err
		}
		if err := v.checkTypeRefs(f+".type", in.Type); err != nil {
			return err
		}
		if in.DefaultValue != nil {
			if err := in.Type.Check(f+".default_value", in.DefaultValue, v.env); err != nil {
				return asDef(err, fmt.Sprintf("%s, the type of input %q", in.Type, in.Name))
			}
		}
	}
	return nil
}

func (v *defValidator) checkOperation(ctx context.Context) error {
	const f = "config.operation"
	cfg := v.kind.NewConfig()
	if err := DecodeConfig(f, v.d.Config.Operation, cfg); err != nil {
		return err
	}
	return v.kind.CheckConfig(ctx, &KindScope{Field: f, Definition: v.d, ObjectType: v.ot, Inputs: v.inputs, Lookup: v.lookup, Env: v.env}, cfg)
}

// CheckMappings checks the property mappings and static patch of an
// update_object or create_object config against the action's object type
// and inputs. With create, every required property without a default
// must be set; otherwise at least one property must be.
func (v *KindScope) CheckMappings(op MappingConfig, create bool) error {
	f := v.Field
	if v.ObjectType == nil {
		return defErr("object_type_id", "required", "%s actions need an object_type_id", v.Definition.OperationKind)
	}
	if len(op.PropertyMappings) == 0 && len(op.StaticPatch) == 0 {
		if !create {
			return defErr(f+".property_mappings", "required", "an %s action needs at least one property mapping or static_patch entry", v.Definition.OperationKind)
		}
	}
	provided := map[string]bool{}
	mapped := map[string]string{}
	for i, m := range op.PropertyMappings {
		mf := fmt.Sprintf("%s.property_mappings[%d]", f, i)
		if m.Property == "" {
			return defErr(mf+".property", "required", "a mapping needs a property")
		}
		p, ok := v.ObjectType.Property(m.Property)
		if !ok {
			return defErr(mf+".property", "unknown_property", "property %q does not exist on object type %s", clip(m.Property), v.ObjectType.Name)
		}
		if prev, dup := mapped[m.Property]; dup {
			return defErr(mf+".property", "duplicate", "property %q is already set by %s", m.Property, prev)
		}
		mapped[m.Property] = mf
		switch {
		case m.Input != "" && m.Value != nil:
			return defErr(mf, "ambiguous", "a mapping takes either input or value, not both")
		case m.Input != "":
			in, ok := v.Inputs[m.Input]
			if !ok {
				return defErr(mf+".input", "unknown_input", "input %q does not exist in this action", clip(m.Input))
			}
			if !in.Type.AssignableTo(p.Type) {
				return defErr(mf+".input", "type_mismatch", "input %q is %s but property %q is %s", in.Name, in.Type, p.Name, p.Type)
			}
			if in.Required || in.DefaultValue != nil {
				provided[p.Name] = true
			}
		case m.Value != nil:
			if err := p.Type.Check(mf+".value", m.Value, v.Env); err != nil {
				return asDef(err, fmt.Sprintf("%s, the type of property %q", p.Type, p.Name))
			}
			provided[p.Name] = true
		default:
			return defErr(mf, "required", "a mapping needs an input or a value")
		}
	}
	for _, k := range sortedKeys(op.StaticPatch) {
		sf := f + ".static_patch." + k
		p, ok := v.ObjectType.Property(k)
		if !ok {
			return defErr(sf, "unknown_property", "property %q does not exist on object type %s", clip(k), v.ObjectType.Name)
		}
		if prev, dup := mapped[k]; dup {
			return defErr(sf, "duplicate", "property %q is already set by %s", k, prev)
		}
		val := op.StaticPatch[k]
		if val == nil {
			if p.Required {
				return defErr(sf, "required", "property %q is required and cannot be cleared", k)
			}
			continue
		}
		if err := p.Type.Check(sf, val, v.Env); err != nil {
			return asDef(err, fmt.Sprintf("%s, the type of property %q", p.Type, p.Name))
		}
		provided[k] = true
	}
	if create {
		for _, p := range v.ObjectType.Properties {
			if p.Required && !p.HasDefault && !provided[p.Name] {
				return defErr(f+".property_mappings", "required_property", "property %q of %s is required and has no default: map it from a required input (or one with a default), a value, or static_patch", p.Name, v.ObjectType.Name)
			}
		}
	}
	return nil
}

// CheckLinkEnds checks a create_link config: a link type attached to the
// action's object type on targetSide, and a required reference input
// (otherInput) of the other side's object type.
func (v *KindScope) CheckLinkEnds(linkTypeID, otherInput, targetSide string) error {
	f := v.Field
	op := struct{ LinkTypeID, OtherObjectInput, TargetSide string }{linkTypeID, otherInput, targetSide}
	if v.ObjectType == nil {
		return defErr("object_type_id", "required", "create_link actions need an object_type_id")
	}
	if op.LinkTypeID == "" {
		return defErr(f+".link_type_id", "required", "a create_link action needs a link_type_id")
	}
	lt, err := v.Lookup.LinkType(op.LinkTypeID)
	if err != nil {
		return err
	}
	if lt == nil {
		return defErr(f+".link_type_id", "not_found", "link type %q does not exist", clip(op.LinkTypeID))
	}
	if lt.SourceObjectTypeID != v.ObjectType.ID && lt.TargetObjectTypeID != v.ObjectType.ID {
		return defErr(f+".link_type_id", "not_attached", "link type %s does not connect object type %s (it links %s to %s)", lt.Name, v.ObjectType.Name, lt.SourceObjectTypeID, lt.TargetObjectTypeID)
	}
	var other string
	switch op.TargetSide {
	case SideSource:
		if lt.SourceObjectTypeID != v.ObjectType.ID {
			return defErr(f+".target_side", "not_attached", "the target (%s) cannot be the source of link type %s, whose source is %s", v.ObjectType.Name, lt.Name, lt.SourceObjectTypeID)
		}
		other = lt.TargetObjectTypeID
	case SideTarget:
		if lt.TargetObjectTypeID != v.ObjectType.ID {
			return defErr(f+".target_side", "not_attached", "the target (%s) cannot be the target of link type %s, whose target is %s", v.ObjectType.Name, lt.Name, lt.TargetObjectTypeID)
		}
		other = lt.SourceObjectTypeID
	case "":
		return defErr(f+".target_side", "required", "target_side is required (source or target: which side of the link the action's target object is on)")
	default:
		return defErr(f+".target_side", "unknown_side", "target_side must be source or target, got %q", clip(op.TargetSide))
	}
	if op.OtherObjectInput == "" {
		return defErr(f+".other_object_input", "required", "other_object_input is required (the reference input holding the other object)")
	}
	in, ok := v.Inputs[op.OtherObjectInput]
	if !ok {
		return defErr(f+".other_object_input", "unknown_input", "input %q does not exist in this action", clip(op.OtherObjectInput))
	}
	if in.Type.Base != TypeReference {
		return defErr(f+".other_object_input", "type_mismatch", "input %q must be a reference, it is %s", in.Name, in.Type)
	}
	if in.Type.ObjectTypeID != "" && in.Type.ObjectTypeID != other {
		return defErr(f+".other_object_input", "type_mismatch", "input %q refers to object type %s but the other side of link type %s is %s", in.Name, in.Type.ObjectTypeID, lt.Name, other)
	}
	if !in.Required && in.DefaultValue == nil {
		return defErr(f+".other_object_input", "not_required", "input %q must be required (or have a default): the link needs the other object", in.Name)
	}
	return nil
}

// CheckWebhook checks an invoke_webhook config's method, URL and headers;
// f is the config's member path.
func CheckWebhook(f, method, rawURL string, headers map[string]string) error {
	op := struct {
		Method, URL string
		Headers     map[string]string
	}{method, rawURL, headers}
	if op.Method == "" {
		return defErr(f+".method", "required", "a webhook needs a method (one of %s)", strings.Join(WebhookMethods, ", "))
	}
	if indexOf(WebhookMethods, op.Method) < 0 {
		return defErr(f+".method", "unknown_method", "webhook method must be one of %s, got %q", strings.Join(WebhookMethods, ", "), clip(op.Method))
	}
	if op.URL == "" {
		return defErr(f+".url", "required", "a webhook needs a url")
	}
	if strings.Contains(urlAuthority(op.URL), "{{") {
		// A host chosen per execution (by a parameter or an object) would
		// let whoever runs the action pick where the call goes.
		return defErr(f+".url", "template_in_host", "webhook url templates are allowed in the path and query only, not in the scheme or host")
	}
	u, err := url.Parse(op.URL)
	if err != nil || u.Host == "" || len(op.URL) > 2048 {
		return defErr(f+".url", "format", "webhook url must be an absolute http(s) URL, got %q", clip(op.URL))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return defErr(f+".url", "scheme", "webhook url scheme must be http or https, got %q", clip(u.Scheme))
	}
	if u.User != nil {
		return defErr(f+".url", "credentials", "webhook url must not embed credentials; use headers")
	}
	for _, k := range sortedKeys(op.Headers) {
		if !tokenRE.MatchString(k) {
			return defErr(f+".headers", "format", "header name %q is not a valid HTTP header name", clip(k))
		}
		if strings.ContainsAny(op.Headers[k], "\r\n\x00") {
			return defErr(f+".headers."+k, "format", "header %s value must not contain CR, LF or NUL", k)
		}
	}
	return nil
}

// urlAuthority is raw's scheme and host part: up to the first '/', '?'
// or '#' after "://" (all of raw when it has no "://").
func urlAuthority(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	rest := raw[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	return raw[:i+3] + rest
}

// CheckFunctionRef checks an invoke_function config's function reference;
// f is the config's member path.
func CheckFunctionRef(f string, op FunctionRef) error {
	n := 0
	if op.Inline != nil {
		n++
	}
	if op.PackageID != "" {
		n++
	}
	if op.PackageName != "" || op.Version != "" {
		n++
	}
	if n != 1 {
		return defErr(f, "function_ref", "an invoke_function action needs exactly one of inline {runtime, source}, package_id, or package_name + version")
	}
	switch {
	case op.Inline != nil:
		if op.Inline.Runtime == "" {
			return defErr(f+".inline.runtime", "required", "an inline function needs a runtime")
		}
		if !runtimeRE.MatchString(op.Inline.Runtime) {
			return defErr(f+".inline.runtime", "format", "runtime %q must match %s", clip(op.Inline.Runtime), runtimeRE)
		}
		if strings.TrimSpace(op.Inline.Source) == "" {
			return defErr(f+".inline.source", "required", "an inline function needs source")
		}
		if len(op.Inline.Source) > MaxFunctionBytes {
			return defErr(f+".inline.source", "too_long", "inline source is at most %d bytes", MaxFunctionBytes)
		}
	case op.PackageID != "":
		if !IsUUID(op.PackageID) {
			return defErr(f+".package_id", "format", "package_id must be a UUID, got %q", clip(op.PackageID))
		}
	default:
		if op.PackageName == "" {
			return defErr(f+".package_name", "required", "package_name is required with version")
		}
		if !NameRE.MatchString(op.PackageName) {
			return defErr(f+".package_name", "format", "package_name %q must match %s", clip(op.PackageName), NameRE)
		}
		if op.Version == "" {
			return defErr(f+".version", "required", "version is required with package_name")
		}
		if !semverRE.MatchString(op.Version) {
			return defErr(f+".version", "format", "version %q must be a semantic version (e.g. 1.2.3)", clip(op.Version))
		}
	}
	if op.AutoUpgrade && op.PackageName == "" {
		return defErr(f+".auto_upgrade", "not_allowed", "auto_upgrade needs package_name + version")
	}
	return nil
}

func isUserType(t PropertyType) bool {
	switch t.Base {
	case TypeString, TypeReference:
		return true
	case TypeArray:
		return t.ElementType != nil && (t.ElementType.Base == TypeString || t.ElementType.Base == TypeReference)
	}
	return false
}

func (v *defValidator) checkNotification(f string, n NotificationSideEffect) error {
	if strings.TrimSpace(n.Title) == "" {
		return defErr(f+".title", "required", "a notification needs a title")
	}
	if len(n.Title) > 500 {
		return defErr(f+".title", "too_long", "title is at most 500 characters")
	}
	if len(n.Body) > 10000 {
		return defErr(f+".body", "too_long", "body is at most 10000 characters")
	}
	if n.Severity != "" && indexOf(Severities, n.Severity) < 0 {
		return defErr(f+".severity", "unknown_severity", "severity must be one of %s, got %q", strings.Join(Severities, ", "), clip(n.Severity))
	}
	if len(n.Category) > 128 {
		return defErr(f+".category", "too_long", "category is at most 128 characters")
	}
	if err := v.checkChannels(f, n); err != nil {
		return err
	}
	for i, id := range n.UserIDs {
		if !IsUUID(id) {
			return defErr(fmt.Sprintf("%s.user_ids[%d]", f, i), "format", "user id must be a UUID, got %q", clip(id))
		}
	}
	if err := checkList(f+".user_ids", n.UserIDs, nil); err != nil {
		return err
	}
	if n.UserIDInputName != "" {
		in, ok := v.inputs[n.UserIDInputName]
		if !ok {
			return defErr(f+".user_id_input_name", "unknown_input", "input %q does not exist in this action", clip(n.UserIDInputName))
		}
		if !isUserType(in.Type) {
			return defErr(f+".user_id_input_name", "type_mismatch", "input %q must hold user ids (string, reference or an array of them), it is %s", in.Name, in.Type)
		}
	}
	if n.TargetUserPropertyName != "" {
		if v.ot == nil {
			return defErr(f+".target_user_property_name", "no_target", "target_user_property_name needs an action with an object type")
		}
		p, ok := v.ot.Property(n.TargetUserPropertyName)
		if !ok {
			return defErr(f+".target_user_property_name", "unknown_property", "property %q does not exist on object type %s", clip(n.TargetUserPropertyName), v.ot.Name)
		}
		if !isUserType(p.Type) {
			return defErr(f+".target_user_property_name", "type_mismatch", "property %q must hold user ids (string, reference or an array of them), it is %s", p.Name, p.Type)
		}
	}
	if n.SendToTargetCreator && v.ot == nil {
		return defErr(f+".send_to_target_creator", "no_target", "send_to_target_creator needs an action with an object type")
	}
	if len(n.UserIDs) == 0 && n.UserIDInputName == "" && n.TargetUserPropertyName == "" && !n.SendToActor && !n.SendToTargetCreator && !n.Broadcast {
		return defErr(f, "no_recipients", "a notification needs at least one recipient source: user_ids, user_id_input_name, target_user_property_name, send_to_actor, send_to_target_creator or broadcast")
	}
	if n.Metadata != nil && !isJSONValue(map[string]any(n.Metadata), 0) {
		return defErr(f+".metadata", "type", "metadata must be a JSON object")
	}
	return nil
}

// checkList refuses empty and duplicate entries, and entries not in allowed
// (when allowed is non-nil).
func checkList(f string, xs []string, allowed []string) error {
	seen := map[string]bool{}
	for i, x := range xs {
		ef := fmt.Sprintf("%s[%d]", f, i)
		if strings.TrimSpace(x) == "" {
			return defErr(ef, "empty", "empty entry")
		}
		if allowed != nil && indexOf(allowed, x) < 0 {
			return defErr(ef, "unknown_value", "%q is not one of %s", clip(x), strings.Join(allowed, ", "))
		}
		if seen[x] {
			return defErr(ef, "duplicate", "duplicate entry %q", clip(x))
		}
		seen[x] = true
	}
	return nil
}

// ValidatePolicy checks an authorization policy; levels are the configured
// markings, which are also the clearance levels.
func ValidatePolicy(f string, p Policy, levels []string) error {
	if len(levels) == 0 {
		levels = DefaultMarkings
	}
	if p.PermissionKey != "" && !permRE.MatchString(p.PermissionKey) {
		return defErr(f+".permission_key", "format", "permission_key must be a non-empty key without spaces (e.g. objects:edit), got %q", clip(p.PermissionKey))
	}
	if err := checkList(f+".required_permission_keys", p.RequiredPermissionKeys, nil); err != nil {
		return err
	}
	for i, k := range p.RequiredPermissionKeys {
		if !permRE.MatchString(k) {
			return defErr(fmt.Sprintf("%s.required_permission_keys[%d]", f, i), "format", "permission key must not contain spaces, got %q", clip(k))
		}
	}
	if err := checkList(f+".any_role", p.AnyRole, nil); err != nil {
		return err
	}
	if err := checkList(f+".all_roles", p.AllRoles, nil); err != nil {
		return err
	}
	if err := checkList(f+".any_group", p.AnyGroup, nil); err != nil {
		return err
	}
	for _, k := range sortedKeys(p.AttributeEquals) {
		af := f + ".attribute_equals." + k
		if strings.TrimSpace(k) == "" {
			return defErr(f+".attribute_equals", "empty", "attribute names must not be empty")
		}
		switch x := p.AttributeEquals[k].(type) {
		case string, bool:
		case nil:
			return defErr(af, "null", "attribute %q must equal a string, number or boolean, got null", k)
		default:
			if !IsNumber(x) {
				return defErr(af, "type", "attribute %q must equal a string, number or boolean, got %s", k, describe(x))
			}
		}
	}
	if err := checkList(f+".allowed_markings", p.AllowedMarkings, levels); err != nil {
		return err
	}
	if p.MinimumClearance != "" && indexOf(levels, p.MinimumClearance) < 0 {
		return defErr(f+".minimum_clearance", "unknown_level", "minimum_clearance %q is not a clearance level (one of %s)", clip(p.MinimumClearance), strings.Join(levels, ", "))
	}
	return nil
}

// InlineEditConfig on a property names the update_object action that edits
// it inline, and optionally the input that carries the new value.
type InlineEditConfig struct {
	ActionTypeID string `json:"action_type_id"`
	InputName    string `json:"input_name,omitempty"`
}

// ValidateInlineEdit checks that action may edit property prop of object
// type objectTypeID inline: same object type, an update_object action, the
// property mapped from an input (cfg.InputName, or exactly one input when
// none is named) whose type equals the property's. It returns the input
// name used; failures are InvalidDefinition naming
// inline_edit_config.action_type_id or inline_edit_config.input_name.
func ValidateInlineEdit(objectTypeID string, prop PropertyInfo, cfg InlineEditConfig, action ActionDefinition) (string, error) {
	const f = "inline_edit_config"
	if cfg.ActionTypeID == "" {
		return "", defErr(f+".action_type_id", "required", "inline_edit_config needs an action_type_id")
	}
	if action.ObjectTypeID != objectTypeID {
		return "", defErr(f+".action_type_id", "wrong_object_type", "action %s belongs to object type %q, not to this property's object type %q", action.Name, action.ObjectTypeID, objectTypeID)
	}
	if action.OperationKind != KindUpdateObject {
		return "", defErr(f+".action_type_id", "wrong_kind", "action %s is a %s action; inline edits need an update_object action", action.Name, action.OperationKind)
	}
	var candidates []string
	for _, m := range action.PropertyMappings() {
		if m.Property == prop.Name && m.Input != "" {
			candidates = append(candidates, m.Input)
		}
	}
	var name string
	switch {
	case cfg.InputName != "":
		if indexOf(candidates, cfg.InputName) < 0 {
			if _, ok := action.Input(cfg.InputName); !ok {
				return "", defErr(f+".input_name", "unknown_input", "action %s has no input %q", action.Name, clip(cfg.InputName))
			}
			return "", defErr(f+".input_name", "not_mapped", "action %s does not map property %q from input %q", action.Name, prop.Name, cfg.InputName)
		}
		name = cfg.InputName
	case len(candidates) == 0:
		return "", defErr(f+".action_type_id", "not_mapped", "action %s does not map property %q from any input", action.Name, prop.Name)
	case len(candidates) > 1:
		return "", defErr(f+".input_name", "ambiguous", "action %s maps property %q from several inputs (%s); name one in input_name", action.Name, prop.Name, strings.Join(candidates, ", "))
	default:
		name = candidates[0]
	}
	in, ok := action.Input(name)
	if !ok {
		return "", defErr(f+".input_name", "unknown_input", "action %s has no input %q", action.Name, name)
	}
	if !in.Type.Equal(prop.Type) {
		field := f + ".input_name"
		if cfg.InputName == "" {
			field = f + ".action_type_id"
		}
		return "", defErr(field, "type_mismatch", "input %q of action %s is %s but property %q is %s; inline edits need equal types", name, action.Name, in.Type, prop.Name, prop.Type)
	}
	return name, nil
}

// Retag returns err with its code replaced by code when it is an
// *apperr.Error of code from (used to report definition failures of object
// types and properties under their own code). Other errors pass through.
func Retag(err error, from, to apperr.Code) error {
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != from {
		return err
	}
	cp := *ae
	cp.Code = to
	return &cp
}
