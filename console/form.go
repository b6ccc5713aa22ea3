package console

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/models"
)

// formInput is one evaluation of an action's form: what the page posted.
type formInput struct {
	ActionID, TargetID string
	// Raw is the posted form (nil on the first render).
	Raw           url.Values
	Justification string
	// Submitted shows every message (a run); live evaluation shows only
	// messages about values the user typed.
	Submitted bool
}

// formView is an action's form as the engine resolved it.
type formView struct {
	ActionID, TargetID, CSRF string
	NeedsTarget              bool
	// TargetMissing: the picked target does not exist or may not be read
	// (the engine answers both alike).
	TargetMissing bool
	Refusal       *refusalView
	Notice        string
	Sections      []sectionView
	Justification bool
	JustValue     string
	JustError     string
	Valid         bool
	Ready         bool
	CanPreview    bool
}

type refusalView struct{ Message, Reason string }

type sectionView struct {
	ID, Title, Description          string
	Columns                         int
	Collapsible, Collapsed, Visible bool
	Fields                          []fieldView
}

type fieldView struct {
	Name, ID, Key, Label, Description string
	Kind                              string
	Required, Visible                 bool
	Value, Lat, Lon, Placeholder      string
	Default                           string
	HasDefault, Checked               bool
	Options                           []string
	RefType                           string
	Step                              string
	Error                             string
	// Media inputs: the picker is offered (Files), and the file the value
	// names is previewed (FileHref; FileImage when an image).
	Files     bool
	FileHref  string
	FileImage bool
	// Reference inputs: the picker's search (posted with the form as
	// <key>.q) and its choices: the search's matches and the picked
	// object, each by title.
	Query   string
	Choices []choice
}

// choice is one option of a reference picker.
type choice struct {
	ID, Label string
	Selected  bool
}

// evaluate asks the executions service to validate the posted form (the
// engine resolves the form schema's overrides over the parameters and the
// target, exactly as an execution will) and builds the form from its
// answer.
func (c *Console) evaluate(g *gin.Context, in formInput) (*formView, error) {
	ctx, p := g.Request.Context(), principal(g)
	at, err := c.d.Store.ActionType(ctx, in.ActionID)
	if err != nil {
		return nil, err
	}
	params, bad := parseParams(at.Inputs, in.Raw)
	fv := &formView{ActionID: at.ID, TargetID: in.TargetID, CSRF: g.GetString(csrfKey),
		Justification: at.Policy.ConfirmationRequired, JustValue: in.Justification, NeedsTarget: in.TargetID != "",
		CanPreview: c.d.Preview != nil}
	v, err := c.d.Executions.Validate(ctx, c.request(at, p.User, p.Guest, in.TargetID, params, in.Justification))
	if err != nil {
		return fv, c.refused(fv, err)
	}
	fv.Ready, fv.Valid = true, v.Result == engine.Valid && len(bad) == 0
	fv.Sections = buildSections(at, v, params, in, bad, c.d.Levels)
	offerFiles(fv.Sections, c.d.Files != nil && !p.Guest)
	if err := c.fillPickers(g, fv.Sections); err != nil {
		return nil, err
	}
	if in.Submitted && fv.Justification && strings.TrimSpace(in.Justification) == "" {
		fv.JustError = "A justification is required."
	}
	return fv, nil
}

func (c *Console) request(at *engine.ActionType, u *models.User, guest bool, target string, params map[string]any, just string) executions.Request {
	return executions.Request{Action: at, Actor: u, Guest: guest, Kind: models.KindExecute,
		TargetID: target, Parameters: params, Justification: just}
}

// refused turns what keeps the form from rendering into the page's
// notice: a missing or unreadable target, or a refusal by policy (with
// its reason). Anything else is an error of the page.
func (c *Console) refused(fv *formView, err error) error {
	ae, ok := apperr.As(err)
	if !ok {
		return err
	}
	switch {
	case ae.Code == apperr.PermissionDenied:
		fv.Refusal = &refusalView{Message: ae.Message}
		if len(ae.Details) > 0 {
			fv.Refusal.Reason = ae.Details[0].Reason
		}
	case ae.Code == apperr.ObjectNotFound:
		fv.NeedsTarget, fv.TargetMissing = true, true
		fv.Notice = "That object does not exist or you may not read it; pick another."
	case hasDetail(ae, "target_object_id"):
		fv.NeedsTarget = true
		fv.Notice = "Pick the object to run this action on."
		if fv.TargetID != "" {
			fv.TargetMissing = true
			fv.Notice = ae.Message
		}
	default:
		return err
	}
	return nil
}

func hasDetail(ae *apperr.Error, field string) bool {
	for _, d := range ae.Details {
		if d.Field == field {
			return true
		}
	}
	return false
}

// buildSections turns the engine's form model (the one the API serves at
// POST .../form) into the page's sections: the console adds only what an
// HTML form needs (field names, input kinds, what the user typed).
func buildSections(at *engine.ActionType, v *engine.Validation, params map[string]any, in formInput, bad map[string]string, levels []string) []sectionView {
	form := engine.BuildForm(at, v, params, levels)
	out := make([]sectionView, 0, len(form.Sections))
	for _, s := range form.Sections {
		sv := sectionView{ID: s.ID, Title: s.Title, Description: s.Description, Columns: s.Columns,
			Collapsible: s.Collapsible, Collapsed: s.Collapsed, Visible: s.Visible}
		for _, p := range s.Parameters {
			sv.Fields = append(sv.Fields, buildField(p, in, bad[p.Name]))
		}
		out = append(out, sv)
	}
	return out
}

func buildField(p engine.FormParameter, in formInput, parseErr string) fieldView {
	key := paramPrefix + p.Name
	f := fieldView{Name: p.Name, ID: fieldID(p.Name), Key: key, Label: fieldLabel(p.Label, p.Name), Description: p.Description,
		Required: p.Required, Visible: p.Visible, Kind: kindOf(p.Type), RefType: p.Type.ObjectTypeID}
	if p.HasDefault {
		f.HasDefault, f.Default = true, formText(p.Type, p.Default)
		f.Placeholder = f.Default
	}
	f.Value = in.Raw.Get(key)
	f.Query = in.Raw.Get(key + ".q")
	f.Lat, f.Lon = in.Raw.Get(key+".lat"), in.Raw.Get(key+".lon")
	switch f.Kind {
	case "checkbox":
		if vs := in.Raw[key]; len(vs) > 0 {
			f.Checked = vs[len(vs)-1] == "true"
		} else {
			f.Checked = p.HasDefault && p.Default == true
		}
	case "select":
		for _, a := range p.AllowedValues {
			if s, ok := a.(string); ok {
				f.Options = append(f.Options, s)
			}
		}
	case "media":
		f.FileHref = rawHref(f.Value)
		f.FileImage = f.FileHref != "" && isImage(f.FileHref)
	case "number":
		f.Step = "any"
		if p.Type.Base == domain.TypeInteger {
			f.Step = "1"
		}
	}
	p.Label = f.Label
	f.Error = fieldMessage(p, in, parseErr, f.Value != "" || f.Lat != "" || f.Lon != "")
	return f
}

// fieldMessage is the message shown beside a field: a value the console
// could not read, then the engine's failed constraints. Until the form is
// submitted, a missing value is not yet an error.
func fieldMessage(p engine.FormParameter, in formInput, parseErr string, typed bool) string {
	if parseErr != "" {
		return parseErr
	}
	var msgs []string
	for _, c := range p.Constraints {
		if c.Result != engine.Invalid {
			continue
		}
		if in.Submitted || (typed && c.Type == "type") {
			msgs = append(msgs, labelled(c.Message, p.Name, p.Label))
		}
	}
	return strings.Join(msgs, " ")
}

// labelled names a parameter in an engine message by the label the form
// shows ("Reason for high priority" is required) rather than its name
// ("reason"), which the API's details keep.
func labelled(msg, name, label string) string {
	if label == "" || label == name {
		return msg
	}
	return strings.ReplaceAll(msg, fmt.Sprintf("parameter %q", name), fmt.Sprintf("%q", label))
}

// kindOf picks the input for a property type.
func kindOf(t domain.PropertyType) string {
	switch t.Base {
	case domain.TypeInteger, domain.TypeDouble:
		return "number"
	case domain.TypeBoolean:
		return "checkbox"
	case domain.TypeDate:
		return "date"
	case domain.TypeTimestamp:
		return "datetime"
	case domain.TypeMarking:
		return "select"
	case domain.TypeReference:
		if t.ObjectTypeID != "" {
			return "reference"
		}
		return "text"
	case domain.TypeArray:
		return "list"
	case domain.TypeGeoPoint:
		return "geo"
	case domain.TypeMediaReference:
		return "media"
	case domain.TypeJSON:
		return "json"
	}
	return "text"
}

// formFragment re-evaluates the form as the user types: the live update.
func (c *Console) formFragment(g *gin.Context) {
	fv, err := c.evaluate(g, postedInput(g, false))
	if err != nil {
		c.fail(g, err)
		return
	}
	c.fragment(g, "form-body", fv)
}

func postedInput(g *gin.Context, submitted bool) formInput {
	_ = g.Request.ParseForm()
	return formInput{ActionID: g.Param("id"), TargetID: g.PostForm("target_object_id"), Raw: g.Request.PostForm,
		Justification: g.PostForm("justification"), Submitted: submitted}
}

// fillPickers renders each reference picker from what was posted: its
// search box keeps what was typed and its list holds that search's
// matches and the picked object, by title. The search is part of the
// form's own live evaluation (one request stream, queued), so no refresh
// can overtake a search or wipe its results.
func (c *Console) fillPickers(g *gin.Context, sections []sectionView) error {
	for i := range sections {
		for j := range sections[i].Fields {
			f := &sections[i].Fields[j]
			if f.Kind != "reference" {
				continue
			}
			if err := c.fillPicker(g, f); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Console) fillPicker(g *gin.Context, f *fieldView) error {
	var opts []objectOption
	if strings.TrimSpace(f.Query) != "" {
		var err error
		if opts, err = c.searchObjects(g, f.RefType, f.Query); err != nil {
			if !hasCode(err, apperr.InvalidArgument) {
				return err
			}
			f.Error = err.Error()
		}
	}
	picked := f.Value == ""
	for _, o := range opts {
		sel := o.ID == f.Value
		picked = picked || sel
		f.Choices = append(f.Choices, choice{ID: o.ID, Label: o.Label, Selected: sel})
	}
	if picked {
		return nil
	}
	refs, err := c.d.Store.ObjectTitles(g.Request.Context(), principal(g).User, []string{f.Value})
	if err != nil {
		return fmt.Errorf("name the picked object: %w", err)
	}
	label := "hidden object"
	if r, ok := refs[f.Value]; ok {
		label = r.Title
	}
	f.Choices = append([]choice{{ID: f.Value, Label: label, Selected: true}}, f.Choices...)
	return nil
}

// fieldLabel is the label a form shows: the one the action gives, else
// the input's name in words ("seen_on" reads "Seen on").
func fieldLabel(label, name string) string {
	if label != "" && label != name {
		return label
	}
	return humanize(name)
}

func humanize(name string) string {
	s := strings.TrimSpace(strings.NewReplacer("_", " ", "-", " ").Replace(name))
	if s == "" {
		return name
	}
	r := []rune(s)
	return strings.ToUpper(string(r[0])) + string(r[1:])
}

// prefill is the first form over a target: each input an update maps to
// a property starts from the target's current value, as the form would
// post it, so the form shows what is there and a run changes only what
// the user changes.
func prefill(at *engine.ActionType, o *models.Object) url.Values {
	raw := url.Values{}
	for _, m := range at.PropertyMappings() {
		in, ok := at.Input(m.Input)
		v := o.Properties.V[m.Property]
		if m.Input == "" || !ok || v == nil {
			continue
		}
		key := paramPrefix + in.Name
		switch in.Type.Base {
		case domain.TypeGeoPoint:
			if p, ok := v.(map[string]any); ok {
				raw.Set(key+".lat", valueText(p["lat"]))
				raw.Set(key+".lon", valueText(p["lon"]))
			}
		case domain.TypeBoolean:
			raw.Set(key, strconv.FormatBool(v == true))
		default:
			raw.Set(key, formText(in.Type, v))
		}
	}
	return raw
}
