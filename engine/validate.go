package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// Parameter validation results, in Foundry's shape.
const (
	Valid   = "VALID"
	Invalid = "INVALID"
)

// Constraint is one evaluated check of a parameter.
type Constraint struct {
	Type    string `json:"type"` // required, type, visibility, unknown
	Result  string `json:"result"`
	Message string `json:"message,omitempty"`
}

// ParameterResult is the validation result of one parameter.
type ParameterResult struct {
	Name        string       `json:"name"`
	Result      string       `json:"result"`
	Required    bool         `json:"required"`
	Visible     bool         `json:"visible"`
	Value       any          `json:"value,omitempty"`
	Constraints []Constraint `json:"evaluated_constraints"`
}

// Validation is the outcome of materializing an execution's parameters.
type Validation struct {
	Result     string            `json:"result"`
	Parameters []ParameterResult `json:"parameters"`
	// Unknown lists supplied parameters the action does not define.
	Unknown []string `json:"unknown_parameters,omitempty"`
	// Edits previews what the operation would change.
	Edits []models.Edit `json:"preview"`
	// JustificationRequired and JustificationSupplied report the
	// confirmation rule without enforcing it (the validate route).
	JustificationRequired bool `json:"justification_required"`
	JustificationSupplied bool `json:"justification_supplied"`
	// Form is the form schema as this validation resolved it (sections,
	// labels, defaults...), for the console to render exactly what the
	// engine enforces; the API's JSON leaves it out.
	Form domain.ResolvedForm `json:"-"`
}

// Request is an execution request as the engine sees it.
type Request struct {
	Action        *ActionType
	Actor         *models.User
	Guest         bool
	TargetID      string
	Parameters    map[string]any
	Justification string
	// WhatIf runs the request on a branch: Branch are the branch's edits,
	// in order, which the target (and every object the request reads) is
	// seen through.
	WhatIf bool
	Branch []models.Edit
	// BranchSteps counts the steps Branch holds the edits of.
	BranchSteps int
}

// input is the loaded state of a request: the target object (nil when the
// kind has none).
type input struct {
	Request
	Target *Object
	// Params are the materialized parameters once validated (nil before).
	Params map[string]any
	// keepPins: materialize keeps media references already pinned (a
	// later step's, from the row the validate step wrote; media.go).
	keepPins bool
}

// load reads the target object of r, refusing a missing or mismatched one.
func (e *Engine) load(ctx context.Context, r Request) (*input, error) {
	in := &input{Request: r}
	at := r.Action
	kind, ok := e.kinds.Get(at.OperationKind)
	if !ok {
		// Stored by a build that registered the kind.
		return nil, NotSupported(at.OperationKind)
	}
	if !kind.HasTarget(at.ObjectTypeID) {
		if r.TargetID != "" {
			return nil, apperr.New(apperr.InvalidArgument, "action %s (%s) takes no target object, got target_object_id %q", at.Name, at.OperationKind, r.TargetID)
		}
		return in, nil
	}
	if r.TargetID == "" {
		return nil, apperr.New(apperr.InvalidArgument, "action %s (%s) needs a target_object_id", at.Name, at.OperationKind).
			WithDetails(apperr.Detail{Field: "target_object_id", Reason: "required", Message: "a target object is required"})
	}
	t, err := e.onto.In(models.Tx{}).Object(ctx, r.TargetID)
	if err != nil {
		return nil, fmt.Errorf("load target object %s: %w", r.TargetID, err)
	}
	if r.WhatIf {
		t = e.branches.Overlay(t, r.TargetID, r.Branch)
	}
	// The read rule comes before anything looks at the target: its type,
	// its properties in form conditions and defaults, its marking in the
	// policy. An object the actor may not read is answered exactly as a
	// missing one, so no answer (nor its timing of steps) tells them apart.
	if t == nil || !e.onto.CanRead(r.Actor, t.Marking, t.Organization) {
		return nil, apperr.New(apperr.ObjectNotFound, "object %q not found", r.TargetID)
	}
	if at.ObjectTypeID != "" && t.ObjectTypeID != at.ObjectTypeID {
		return nil, apperr.New(apperr.InvalidArgument, "object %q is not of the action's object type", r.TargetID).
			WithDetails(apperr.Detail{Field: "target_object_id", Reason: "wrong_object_type", Message: "the target is of another object type"})
	}
	in.Target = t
	return in, nil
}

// materialize applies the form schema's overrides over the supplied
// parameters and the target, fills defaults, type-checks every value and
// previews the edits. It returns the effective parameters; v.Result is
// Invalid when any parameter is.
func (e *Engine) materialize(ctx context.Context, in *input) (map[string]any, *Validation) {
	at := in.Action
	v := &Validation{Result: Valid, JustificationRequired: at.Policy.ConfirmationRequired,
		JustificationSupplied: strings.TrimSpace(in.Justification) != ""}
	supplied := in.Parameters
	if supplied == nil {
		supplied = map[string]any{}
	}
	for name := range supplied {
		if _, ok := at.Input(name); !ok {
			v.Unknown = append(v.Unknown, name)
			v.Result = Invalid
		}
	}
	sort.Strings(v.Unknown)

	env := domain.EvalEnv{Parameters: supplied, Markings: e.levels}
	if in.Target != nil {
		env.Target = &domain.EvalTarget{ID: in.Target.ID, Marking: in.Target.Marking, CreatedBy: in.Target.CreatedBy, Properties: in.Target.Properties}
	}
	form := at.FormSchema.Resolve(at.Inputs, env)
	v.Form = form
	check := e.checkEnv(ctx, in.Actor)
	if in.WhatIf {
		check.ResolveReference = e.branches.Resolver(ctx, in.Actor, in.Branch)
	}
	params := map[string]any{}
	for _, field := range at.Inputs {
		rp, _ := form.Parameter(field.Name)
		pr := ParameterResult{Name: field.Name, Result: Valid, Required: rp.Required, Visible: rp.Visible}
		bad := func(kind, msg string) {
			pr.Result = Invalid
			pr.Constraints = append(pr.Constraints, Constraint{Type: kind, Result: Invalid, Message: msg})
		}
		val, given := supplied[field.Name]
		switch {
		case given && val == nil && rp.Required:
			bad("required", fmt.Sprintf("parameter %q is required; an explicit null is not a value", field.Name))
		case given && val != nil:
			params[field.Name] = val
		case rp.HasDefault && rp.Default != nil:
			params[field.Name] = rp.Default
		}
		val, present := params[field.Name]
		if rp.Required && !present && pr.Result == Valid {
			if !rp.Visible {
				bad("visibility", fmt.Sprintf("parameter %q is required but hidden by the form, and has no value or default", field.Name))
			} else {
				bad("required", fmt.Sprintf("parameter %q is required", field.Name))
			}
		} else if rp.Required {
			pr.Constraints = append(pr.Constraints, Constraint{Type: "required", Result: Valid})
		}
		if present {
			if err := field.Type.Check("parameters."+field.Name, val, check); err != nil {
				bad("type", apperr.MessageOf(err))
			} else {
				params[field.Name] = field.Type.Normalize(val)
				pr.Value = params[field.Name]
				pr.Constraints = append(pr.Constraints, Constraint{Type: "type", Result: Valid})
			}
		}
		if pr.Result == Invalid {
			v.Result = Invalid
		}
		v.Parameters = append(v.Parameters, pr)
	}
	e.resolveMedia(ctx, in, params, v)
	if v.Result == Valid {
		v.Edits = e.preview(ctx, in, params)
	}
	return params, v
}

// refusal turns an invalid validation into the ActionValidationFailed
// error, with one detail per failed constraint and the whole result as
// data.
func (v *Validation) refusal() error {
	if v.Result == Valid {
		return nil
	}
	e := apperr.New(apperr.ActionValidationFailed, "the action's parameters are not valid")
	// The refusal travels through Temporal (and the action log): without
	// the values, which the execution's parameters hold, its size is
	// bounded by the action's inputs, not by what a client sent.
	bounded := *v
	bounded.Parameters = make([]ParameterResult, len(v.Parameters))
	for i, p := range v.Parameters {
		p.Value = nil
		bounded.Parameters[i] = p
	}
	bounded.Edits = nil
	v = &bounded
	for _, u := range v.Unknown {
		e.WithDetails(apperr.Detail{Field: "parameters." + u, Reason: "unknown", Message: fmt.Sprintf("unknown parameter %q", u)})
	}
	for _, p := range v.Parameters {
		for _, c := range p.Constraints {
			if c.Result == Invalid {
				e.WithDetails(apperr.Detail{Field: "parameters." + p.Name, Reason: c.Type, Message: c.Message})
			}
		}
	}
	e.Data = v
	return e
}

// preview describes the edits the operation would make, without writing
// (none when the kind cannot tell).
func (e *Engine) preview(ctx context.Context, in *input, params map[string]any) []models.Edit {
	kind, op, err := e.op(in.Action, in.Actor, in.Target, params)
	if err != nil {
		return nil
	}
	edits, err := kind.Preview(ctx, op)
	if err != nil {
		e.log.WarnContext(ctx, "preview failed", "action", in.Action.Name, "kind", in.Action.OperationKind, "err", err)
		return nil
	}
	return edits
}

// Check is the side-effect-free validation of the validate route: the same
// materialization and authorization as an execution, except that a missing
// justification is reported rather than refused. A refused actor is an
// error (403); invalid parameters are not (the result says INVALID).
func (e *Engine) Check(ctx context.Context, r Request) (*Validation, error) {
	in, err := e.load(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := e.authorize(in, false); err != nil {
		return nil, err
	}
	_, v := e.materialize(ctx, in)
	return v, nil
}

// actor loads an execution's actor.
func (e *Engine) actor(ctx context.Context, id string) (*models.User, error) {
	var u models.User
	err := e.db.WithContext(ctx).Take(&u, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.New(apperr.PermissionDenied, "the actor no longer exists").
			WithDetails(apperr.Detail{Reason: "actor_missing", Message: "the user who submitted the action no longer exists"})
	}
	if err != nil {
		return nil, fmt.Errorf("load actor %s: %w", id, err)
	}
	return &u, nil
}
