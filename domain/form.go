package domain

import (
	"fmt"
)

// FormSchema lays out an action's parameters: sections, and conditional
// overrides of parameters. Every override whose conditions all hold
// applies, in definition order, member by member: a later matching
// override wins for the members it sets, and members no matching override
// sets keep their base value.
type FormSchema struct {
	Sections           []Section           `json:"sections,omitempty"`
	ParameterOverrides []ParameterOverride `json:"parameter_overrides,omitempty"`
}

// Section is a group of parameters in the form.
type Section struct {
	ID          string `json:"id"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Columns is 1 or 2 (0 means 1).
	Columns     int  `json:"columns,omitempty"`
	Collapsible bool `json:"collapsible,omitempty"`
	// Collapsed starts a collapsible section closed.
	Collapsed bool `json:"collapsed,omitempty"`
	// Visible defaults to true.
	Visible *bool `json:"visible,omitempty"`
	// Parameters are input names, in display order; an input belongs to at
	// most one section.
	Parameters []string          `json:"parameters,omitempty"`
	Overrides  []SectionOverride `json:"overrides,omitempty"`
}

// SectionOverride changes a section when all its conditions hold.
type SectionOverride struct {
	Conditions  []Condition `json:"conditions"`
	Visible     *bool       `json:"visible,omitempty"`
	Title       *string     `json:"title,omitempty"`
	Description *string     `json:"description,omitempty"`
	Columns     *int        `json:"columns,omitempty"`
}

// ParameterOverride changes one parameter when all its conditions hold.
type ParameterOverride struct {
	Parameter    string      `json:"parameter"`
	Conditions   []Condition `json:"conditions"`
	Visible      *bool       `json:"visible,omitempty"`
	Required     *bool       `json:"required,omitempty"`
	Label        *string     `json:"label,omitempty"`
	Description  *string     `json:"description,omitempty"`
	DefaultValue any         `json:"default_value,omitempty"`
}

// Validate checks the form schema against the action's inputs (scope.Inputs)
// and target (for condition paths). field is the member name prefix
// ("form_schema").
func (fs FormSchema) Validate(field string, inputs []InputField, sc ConditionScope, env CheckEnv) error {
	byName := map[string]InputField{}
	for _, in := range inputs {
		byName[in.Name] = in
	}
	ids := map[string]int{}
	placed := map[string]string{}
	for i, s := range fs.Sections {
		f := fmt.Sprintf("%s.sections[%d]", field, i)
		if s.ID == "" {
			return defErr(f+".id", "required", "a section needs an id")
		}
		if !identRE.MatchString(s.ID) {
			return defErr(f+".id", "format", "section id %q must match %s", clip(s.ID), identRE)
		}
		if j, dup := ids[s.ID]; dup {
			return defErr(f+".id", "duplicate", "section id %q is already used by sections[%d]", s.ID, j)
		}
		ids[s.ID] = i
		if s.Collapsed && !s.Collapsible {
			return defErr(f+".collapsed", "not_collapsible", "only a collapsible section can start collapsed")
		}
		if s.Columns != 0 && s.Columns != 1 && s.Columns != 2 {
			return defErr(f+".columns", "range", "columns must be 1 or 2, got %d", s.Columns)
		}
		for j, p := range s.Parameters {
			pf := fmt.Sprintf("%s.parameters[%d]", f, j)
			if _, ok := byName[p]; !ok {
				return defErr(pf, "unknown_input", "section parameter %q names no input of this action", clip(p))
			}
			if other, dup := placed[p]; dup {
				return defErr(pf, "duplicate", "parameter %q is already placed in section %q", p, other)
			}
			placed[p] = s.ID
		}
		for j, o := range s.Overrides {
			of := fmt.Sprintf("%s.overrides[%d]", f, j)
			if len(o.Conditions) == 0 {
				return defErr(of+".conditions", "required", "an override needs at least one condition")
			}
			for k, c := range o.Conditions {
				if err := c.Validate(fmt.Sprintf("%s.conditions[%d]", of, k), sc); err != nil {
					return err
				}
			}
			if o.Visible == nil && o.Title == nil && o.Description == nil && o.Columns == nil {
				return defErr(of, "empty", "an override must set at least one of visible, title, description, columns")
			}
			if o.Columns != nil && *o.Columns != 1 && *o.Columns != 2 {
				return defErr(of+".columns", "range", "columns must be 1 or 2, got %d", *o.Columns)
			}
		}
	}
	for i, o := range fs.ParameterOverrides {
		f := fmt.Sprintf("%s.parameter_overrides[%d]", field, i)
		in, ok := byName[o.Parameter]
		if o.Parameter == "" {
			return defErr(f+".parameter", "required", "a parameter override needs a parameter (an input name)")
		}
		if !ok {
			return defErr(f+".parameter", "unknown_input", "parameter %q names no input of this action", clip(o.Parameter))
		}
		if len(o.Conditions) == 0 {
			return defErr(f+".conditions", "required", "an override needs at least one condition")
		}
		for k, c := range o.Conditions {
			if err := c.Validate(fmt.Sprintf("%s.conditions[%d]", f, k), sc); err != nil {
				return err
			}
		}
		if o.Visible == nil && o.Required == nil && o.Label == nil && o.Description == nil && o.DefaultValue == nil {
			return defErr(f, "empty", "an override must set at least one of visible, required, label, description, default_value")
		}
		if o.Visible != nil && !*o.Visible && o.Required != nil && *o.Required {
			return defErr(f, "hidden_required", "parameter %q cannot be hidden and required by the same override", o.Parameter)
		}
		if o.DefaultValue != nil {
			if err := in.Type.Check(f+".default_value", o.DefaultValue, env); err != nil {
				return asDef(err, fmt.Sprintf("%s, the type of input %q", in.Type, in.Name))
			}
		}
	}
	return nil
}

// ResolvedParameter is the effective form state of one parameter.
type ResolvedParameter struct {
	Name        string       `json:"name"`
	Type        PropertyType `json:"type"`
	Section     string       `json:"section,omitempty"`
	Visible     bool         `json:"visible"`
	Required    bool         `json:"required"`
	Label       string       `json:"label"`
	Description string       `json:"description,omitempty"`
	// Default is the effective default (nil when HasDefault is false).
	Default    any  `json:"default,omitempty"`
	HasDefault bool `json:"has_default"`
	// Overrides are the indexes in form_schema.parameter_overrides of the
	// overrides that applied, in the order they applied.
	Overrides []int `json:"overrides,omitempty"`
}

// ResolvedSection is the effective form state of one section.
type ResolvedSection struct {
	ID          string   `json:"id"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Columns     int      `json:"columns"`
	Collapsible bool     `json:"collapsible"`
	Collapsed   bool     `json:"collapsed"`
	Visible     bool     `json:"visible"`
	Parameters  []string `json:"parameters"`
}

// ResolvedForm is the form after evaluating every override.
type ResolvedForm struct {
	Sections []ResolvedSection `json:"sections"`
	// Parameters follow the order of the action's inputs.
	Parameters []ResolvedParameter `json:"parameters"`
}

// Parameter returns the resolved parameter called name.
func (rf ResolvedForm) Parameter(name string) (ResolvedParameter, bool) {
	for _, p := range rf.Parameters {
		if p.Name == name {
			return p, true
		}
	}
	return ResolvedParameter{}, false
}

// Resolve evaluates the form schema over env: every override whose
// conditions all hold applies over the base values (input definition:
// visible, required flag, display name or name as label, description,
// default_value), in definition order, member by member, so a later
// matching override wins for what it sets. A conditional default thus
// counts when a conditional requiredness is judged. A parameter placed in
// a hidden section is hidden. Resolve does not judge contradictions
// (hidden but required): the engine reports those per parameter.
func (fs FormSchema) Resolve(inputs []InputField, env EvalEnv) ResolvedForm {
	var rf ResolvedForm
	sectionOf := map[string]int{}
	for _, s := range fs.Sections {
		rs := resolveSection(s, env)
		for _, p := range s.Parameters {
			if _, seen := sectionOf[p]; !seen {
				sectionOf[p] = len(rf.Sections)
			}
		}
		rf.Sections = append(rf.Sections, rs)
	}
	for _, in := range inputs {
		rp := fs.resolveParameter(in, env)
		if si, ok := sectionOf[in.Name]; ok {
			rp.Section = rf.Sections[si].ID
			if !rf.Sections[si].Visible {
				rp.Visible = false
			}
		}
		rf.Parameters = append(rf.Parameters, rp)
	}
	return rf
}

func resolveSection(s Section, env EvalEnv) ResolvedSection {
	rs := ResolvedSection{
		ID: s.ID, Title: s.Title, Description: s.Description,
		Columns: s.Columns, Collapsible: s.Collapsible, Collapsed: s.Collapsible && s.Collapsed,
		Visible: s.Visible == nil || *s.Visible, Parameters: append([]string{}, s.Parameters...),
	}
	for _, o := range s.Overrides {
		if !EvaluateAll(o.Conditions, env) {
			continue
		}
		setIf(&rs.Visible, o.Visible)
		setIf(&rs.Title, o.Title)
		setIf(&rs.Description, o.Description)
		setIf(&rs.Columns, o.Columns)
	}
	if rs.Columns == 0 {
		rs.Columns = 1
	}
	return rs
}

func (fs FormSchema) resolveParameter(in InputField, env EvalEnv) ResolvedParameter {
	rp := ResolvedParameter{
		Name: in.Name, Type: in.Type, Visible: true, Required: in.Required,
		Label: in.DisplayName, Description: in.Description,
	}
	if rp.Label == "" {
		rp.Label = in.Name
	}
	if in.DefaultValue != nil {
		rp.Default, rp.HasDefault = in.DefaultValue, true
	}
	for i, o := range fs.ParameterOverrides {
		if o.Parameter != in.Name || !EvaluateAll(o.Conditions, env) {
			continue
		}
		rp.Overrides = append(rp.Overrides, i)
		setIf(&rp.Visible, o.Visible)
		setIf(&rp.Required, o.Required)
		setIf(&rp.Label, o.Label)
		setIf(&rp.Description, o.Description)
		if o.DefaultValue != nil {
			rp.Default, rp.HasDefault = o.DefaultValue, true
		}
	}
	return rp
}

// setIf sets *dst to *v when an override sets the member (v non-nil).
func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}
