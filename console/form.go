package console

import (
	"net/url"
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
}

type refusalView struct{ Message, Reason string }

type sectionView struct {
	ID, Title, Description string
	Columns                int
	Collapsible, Visible   bool
	Fields                 []fieldView
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
		Justification: at.Policy.ConfirmationRequired, JustValue: in.Justification, NeedsTarget: in.TargetID != ""}
	v, err := c.d.Executions.Validate(ctx, c.request(at, p.User, p.Guest, in.TargetID, params, in.Justification))
	if err != nil {
		return fv, c.refused(fv, err)
	}
	fv.Ready, fv.Valid = true, v.Result == engine.Valid && len(bad) == 0
	fv.Sections = buildSections(at, v, in, bad, c.d.Levels)
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

// buildSections lays the resolved parameters out in their sections; the
// parameters no section places follow in a section of their own.
func buildSections(at *engine.ActionType, v *engine.Validation, in formInput, bad map[string]string, levels []string) []sectionView {
	fields := map[string]fieldView{}
	for _, rp := range v.Form.Parameters {
		fields[rp.Name] = buildField(rp, result(v, rp.Name), in, bad[rp.Name], levels)
	}
	var out []sectionView
	placed := map[string]bool{}
	for _, rs := range v.Form.Sections {
		sv := sectionView{ID: rs.ID, Title: rs.Title, Description: rs.Description, Columns: rs.Columns,
			Collapsible: rs.Collapsible, Visible: rs.Visible}
		for _, name := range rs.Parameters {
			if f, ok := fields[name]; ok && !placed[name] {
				sv.Fields, placed[name] = append(sv.Fields, f), true
			}
		}
		out = append(out, sv)
	}
	rest := sectionView{ID: "parameters", Columns: 1, Visible: true}
	if len(out) > 0 {
		rest.Title = "Other parameters"
	}
	for _, inp := range at.Inputs {
		if !placed[inp.Name] {
			rest.Fields = append(rest.Fields, fields[inp.Name])
		}
	}
	if len(rest.Fields) > 0 {
		out = append(out, rest)
	}
	return out
}

func result(v *engine.Validation, name string) engine.ParameterResult {
	for _, p := range v.Parameters {
		if p.Name == name {
			return p
		}
	}
	return engine.ParameterResult{}
}

func buildField(rp domain.ResolvedParameter, pr engine.ParameterResult, in formInput, parseErr string, levels []string) fieldView {
	key := paramPrefix + rp.Name
	f := fieldView{Name: rp.Name, ID: fieldID(rp.Name), Key: key, Label: rp.Label, Description: rp.Description,
		Required: rp.Required, Visible: rp.Visible, Kind: kindOf(rp.Type), RefType: rp.Type.ObjectTypeID}
	if rp.HasDefault {
		f.HasDefault, f.Default = true, formText(rp.Type, rp.Default)
		f.Placeholder = f.Default
	}
	f.Value = in.Raw.Get(key)
	f.Lat, f.Lon = in.Raw.Get(key+".lat"), in.Raw.Get(key+".lon")
	switch f.Kind {
	case "checkbox":
		if vs := in.Raw[key]; len(vs) > 0 {
			f.Checked = vs[len(vs)-1] == "true"
		} else {
			f.Checked = rp.HasDefault && rp.Default == true
		}
	case "select":
		f.Options = levels
	case "number":
		f.Step = "any"
		if rp.Type.Base == domain.TypeInteger {
			f.Step = "1"
		}
	}
	f.Error = fieldMessage(pr, in, parseErr, f.Value != "" || f.Lat != "" || f.Lon != "")
	return f
}

// fieldMessage is the message shown beside a field: a value the console
// could not read, then the engine's failed constraints. Until the form is
// submitted, a missing value is not yet an error.
func fieldMessage(pr engine.ParameterResult, in formInput, parseErr string, typed bool) string {
	if parseErr != "" {
		return parseErr
	}
	var msgs []string
	for _, c := range pr.Constraints {
		if c.Result != engine.Invalid {
			continue
		}
		if in.Submitted || (typed && c.Type == "type") {
			msgs = append(msgs, c.Message)
		}
	}
	return strings.Join(msgs, " ")
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
		return "url"
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
