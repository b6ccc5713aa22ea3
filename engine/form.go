package engine

import (
	"context"
	"strings"

	"github.com/ontoflow/ontoflow/domain"
)

// Form is an action's form resolved for a target and the parameters typed
// so far: every section and parameter after the form schema's overrides,
// with each parameter's value and validation, as the same materialization
// an execution runs computed them. It is the one model of the form: the
// API serves it (POST .../form) and the console draws it.
type Form struct {
	ActionTypeID string `json:"action_type_id"`
	ActionName   string `json:"action_type_name"`
	DisplayName  string `json:"display_name,omitempty"`
	// Result is VALID when an execution with these parameters would pass
	// validation.
	Result   string        `json:"result"`
	Sections []FormSection `json:"sections"`
	// Unknown lists supplied parameters the action does not define.
	Unknown               []string `json:"unknown_parameters,omitempty"`
	JustificationRequired bool     `json:"justification_required"`
}

// FormSection is one section, in order. Parameters no section places
// follow in a last section with the id OtherSection.
type FormSection struct {
	ID          string          `json:"id"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Columns     int             `json:"columns"`
	Collapsible bool            `json:"collapsible"`
	Collapsed   bool            `json:"collapsed"`
	Visible     bool            `json:"visible"`
	Parameters  []FormParameter `json:"parameters"`
}

// FormParameter is one parameter as the form shows it.
type FormParameter struct {
	Name        string              `json:"name"`
	Label       string              `json:"label"`
	Description string              `json:"description,omitempty"`
	Type        domain.PropertyType `json:"type"`
	Required    bool                `json:"required"`
	Visible     bool                `json:"visible"`
	Default     any                 `json:"default,omitempty"`
	HasDefault  bool                `json:"has_default"`
	// Value is the current value: the one typed (normalized when it is
	// valid, as typed when not), else the effective default.
	Value any `json:"value,omitempty"`
	// AllowedValues lists the values a closed type admits (markings,
	// booleans); absent for open types.
	AllowedValues []any `json:"allowed_values,omitempty"`
	// Result is VALID or INVALID; Message joins the failed constraints'
	// messages.
	Result      string       `json:"result"`
	Message     string       `json:"validation_message,omitempty"`
	Constraints []Constraint `json:"evaluated_constraints"`
	// Overrides are the indexes of the parameter overrides that applied.
	Overrides []int `json:"overrides,omitempty"`
}

// OtherSection is the id of the section holding the parameters no
// section places.
const OtherSection = "parameters"

// Form resolves r's form: the validate route's check (target, policy,
// materialization), answered as the form model.
func (e *Engine) Form(ctx context.Context, r Request) (*Form, error) {
	v, err := e.Check(ctx, r)
	if err != nil {
		return nil, err
	}
	return BuildForm(r.Action, v, r.Parameters, e.levels), nil
}

// BuildForm lays v's resolved parameters out in their sections; supplied
// are the parameters as typed, levels the configured markings.
func BuildForm(at *ActionType, v *Validation, supplied map[string]any, levels []string) *Form {
	f := &Form{ActionTypeID: at.ID, ActionName: at.Name, DisplayName: at.DisplayName, Result: v.Result,
		Unknown: v.Unknown, JustificationRequired: at.Policy.ConfirmationRequired}
	params := map[string]FormParameter{}
	for _, rp := range v.Form.Parameters {
		params[rp.Name] = formParameter(rp, resultOf(v, rp.Name), supplied, levels)
	}
	placed := map[string]bool{}
	for _, rs := range v.Form.Sections {
		s := FormSection{ID: rs.ID, Title: rs.Title, Description: rs.Description, Columns: rs.Columns,
			Collapsible: rs.Collapsible, Collapsed: rs.Collapsed, Visible: rs.Visible, Parameters: []FormParameter{}}
		for _, name := range rs.Parameters {
			if p, ok := params[name]; ok && !placed[name] {
				s.Parameters, placed[name] = append(s.Parameters, p), true
			}
		}
		f.Sections = append(f.Sections, s)
	}
	rest := FormSection{ID: OtherSection, Columns: 1, Visible: true}
	if len(f.Sections) > 0 {
		rest.Title = "Other parameters"
	}
	for _, in := range at.Inputs {
		if !placed[in.Name] {
			rest.Parameters = append(rest.Parameters, params[in.Name])
		}
	}
	if len(rest.Parameters) > 0 {
		f.Sections = append(f.Sections, rest)
	}
	if f.Sections == nil {
		f.Sections = []FormSection{}
	}
	return f
}

func resultOf(v *Validation, name string) ParameterResult {
	for _, p := range v.Parameters {
		if p.Name == name {
			return p
		}
	}
	return ParameterResult{Result: Valid}
}

func formParameter(rp domain.ResolvedParameter, pr ParameterResult, supplied map[string]any, levels []string) FormParameter {
	p := FormParameter{Name: rp.Name, Label: rp.Label, Description: rp.Description, Type: rp.Type,
		Required: rp.Required, Visible: rp.Visible, HasDefault: rp.HasDefault, Value: pr.Value,
		AllowedValues: allowedValues(rp.Type, levels), Result: pr.Result, Constraints: pr.Constraints,
		Overrides: rp.Overrides}
	if rp.HasDefault {
		p.Default = rp.Default
	}
	if raw, ok := supplied[rp.Name]; ok && p.Value == nil {
		p.Value = raw
	}
	if p.Constraints == nil {
		p.Constraints = []Constraint{}
	}
	var msgs []string
	for _, c := range pr.Constraints {
		if c.Result == Invalid {
			msgs = append(msgs, c.Message)
		}
	}
	p.Message = strings.Join(msgs, " ")
	return p
}

// allowedValues are the values a closed type admits, nil for an open one.
func allowedValues(t domain.PropertyType, levels []string) []any {
	switch t.Base {
	case domain.TypeMarking:
		out := make([]any, 0, len(levels))
		for _, l := range levels {
			out = append(out, l)
		}
		return out
	case domain.TypeBoolean:
		return []any{true, false}
	}
	return nil
}
