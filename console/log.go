package console

import (
	"context"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

const logPageSize = 50

type logView struct {
	Action, Actor, Status, Kind, Since string
	Target                             string
	Statuses, Kinds                    []string
	Actions                            []ontology.ActionTypeView
	Rows                               []models.Execution
	Names                              rowNames
	Page                               int
	More                               bool
	Error                              string
}

// logPage is the action log: the caller's executions (everyone's with
// the audit permission), filtered, newest first, redacted as the API
// redacts them.
func (c *Console) logPage(g *gin.Context) {
	ctx, p := g.Request.Context(), principal(g)
	v := logView{Action: g.Query("action"), Actor: g.Query("actor"), Status: g.Query("status"), Kind: g.Query("kind"),
		Since: g.Query("since"), Target: g.Query("target"), Statuses: executions.Statuses, Kinds: executions.Kinds}
	var err error
	if v.Page, err = pageNumber(g.Query("page"), "page"); err != nil {
		c.fail(g, err)
		return
	}
	v.Actions, _ = c.d.Store.ListActionTypes(ctx, "", "", 0, maxListed)
	f, err := c.logFilter(g, v)
	if err != nil {
		v.Error = err.Error()
		c.page(g, http.StatusBadRequest, "log", "Action log", v)
		return
	}
	if !auth.HasPermission(p.User, executions.PermAuditExecutions) {
		f.OnlyActorID = p.User.ID
	}
	rows, err := c.d.Executions.List(ctx, f, v.Page*logPageSize, logPageSize+1)
	if err != nil {
		c.fail(g, err)
		return
	}
	c.d.Store.RedactExecutions(ctx, p, rows)
	if len(rows) > logPageSize {
		rows, v.More = rows[:logPageSize], true
	}
	v.Rows = rows
	names := map[string]string{}
	for _, a := range v.Actions {
		names[a.ID] = displayName(a.DisplayName, a.Name)
	}
	v.Names = c.rowNames(g, names, rows)
	c.page(g, http.StatusOK, "log", "Action log", v)
}

// rowNames names what the log and an execution's page show by id: actions
// by their display name, objects by their title, linked.
type rowNames struct {
	Actions map[string]string
	Objects map[string]ontology.ObjectRef
	// props are the types of the properties edits wrote ("<object type
	// id>/<property>") and of the rows' parameters ("<action type
	// id>/<input>"), labels the inputs' display names, both read only
	// for pages that show edits or parameters (withValues).
	props  map[string]domain.PropertyType
	labels map[string]string
}

// Value is an edit's value of property prop of an object of type typeID,
// a reference by its object's title.
func (n rowNames) Value(typeID, prop string, v any) cell {
	return refCell(n.props[typeID+"/"+prop], v, n.Objects)
}

// Param is a parameter of ex as its page shows it: its label, and its
// value (a reference by its object's title, a pinned file as a link).
func (n rowNames) Param(ex models.Execution, name string) paramView {
	v := ex.Parameters.V[name]
	pv := paramView{Name: name, Label: name, Cell: refCell(n.props[ex.ActionTypeID+"/"+name], v, n.Objects)}
	if l := n.labels[ex.ActionTypeID+"/"+name]; l != "" {
		pv.Label = l
	}
	if pv.Cell.Refs == nil {
		pv.Pinned = pinnedFile(v)
	}
	return pv
}

// paramView is one parameter on an execution's page.
type paramView struct {
	Name, Label string
	Cell        cell
	Pinned      template.HTML
}

// Action is the display name of the action a row ran, or the name the
// row recorded when the action is gone.
func (n rowNames) Action(ex models.Execution) string {
	if d := n.Actions[ex.ActionTypeID]; d != "" {
		return d
	}
	return ex.ActionTypeName
}

// rowNames reads the titles of the rows' targets and edited objects the
// user may read (one query); a failure only costs the names.
func (c *Console) rowNames(g *gin.Context, actions map[string]string, rows []models.Execution) rowNames {
	return c.names(g, actions, rows, false)
}

// valueNames is rowNames for pages that show the rows' edits and
// parameters: the references among their values are named too.
func (c *Console) valueNames(g *gin.Context, actions map[string]string, rows []models.Execution) rowNames {
	return c.names(g, actions, rows, true)
}

func (c *Console) names(g *gin.Context, actions map[string]string, rows []models.Execution, withValues bool) rowNames {
	n := rowNames{Actions: actions}
	var ids []string
	if withValues {
		ids = c.valueTypes(g.Request.Context(), &n, rows)
	}
	for _, ex := range rows {
		if ex.TargetObjectID != "" {
			ids = append(ids, ex.TargetObjectID)
		}
		for _, e := range ex.Edits.V {
			if e.ObjectID != "" {
				ids = append(ids, e.ObjectID)
			}
		}
	}
	objs, err := c.d.Store.ObjectTitles(g.Request.Context(), principal(g).User, ids)
	if err != nil {
		c.d.Logger.WarnContext(g.Request.Context(), "name the objects of the action log", "err", err)
	}
	n.Objects = objs
	return n
}

func (c *Console) logFilter(g *gin.Context, v logView) (executions.Filter, error) {
	f := executions.Filter{Actor: v.Actor, Status: v.Status, Kind: v.Kind, ActionTypeID: v.Action, Target: v.Target}
	if v.Status != "" && !slices.Contains(executions.Statuses, v.Status) {
		return f, apperr.New(apperr.InvalidArgument, "unknown status %q", v.Status)
	}
	if v.Kind != "" && !slices.Contains(executions.Kinds, v.Kind) {
		return f, apperr.New(apperr.InvalidArgument, "unknown kind %q", v.Kind)
	}
	if v.Since != "" {
		t, err := time.Parse("2006-01-02", v.Since)
		if err != nil {
			return f, apperr.New(apperr.InvalidArgument, "the date must read YYYY-MM-DD")
		}
		f.Since = t
	}
	return f, nil
}

type executionView struct {
	Execution   *models.Execution
	Names       rowNames
	WorkflowURL string
	Failure     any
	CanUndo     bool
	CSRF        string
}

// executionPage is one execution: parameters, edits, result,
// notifications and its workflow in the Temporal UI. The API's rule
// applies: one's own executions, or every one with the audit permission.
func (c *Console) executionPage(g *gin.Context) {
	ctx, p := g.Request.Context(), principal(g)
	ex, err := c.d.Executions.Get(ctx, g.Param("id"))
	if err == nil && ex.ActorID != p.User.ID && !auth.HasPermission(p.User, executions.PermAuditExecutions) {
		err = apperr.New(apperr.ExecutionNotFound, "execution %q not found", g.Param("id"))
	}
	if err != nil {
		c.fail(g, err)
		return
	}
	c.d.Store.RedactExecution(ctx, p, ex)
	v := executionView{Execution: ex, WorkflowURL: c.d.Executions.WorkflowURL(ex), CSRF: g.GetString(csrfKey),
		CanUndo: !ex.Redacted && c.canUndo(ctx, p.User, ex)}
	if f := failureOf(ex); f != nil {
		v.Failure = f
	}
	names := map[string]string{}
	if at, err := c.d.Store.ActionType(ctx, ex.ActionTypeID); err == nil {
		names[at.ID] = displayName(at.DisplayName, at.Name)
	}
	v.Names = c.valueNames(g, names, []models.Execution{*ex})
	c.page(g, http.StatusOK, "execution", v.Names.Action(*ex), v)
}

// valueTypes reads the types of the properties the rows' edits wrote and
// of their parameters (each object and action type once) into n, and
// returns the ids their reference values name. A type that cannot be
// read (deleted since) leaves its values shown as they are.
func (c *Console) valueTypes(ctx context.Context, n *rowNames, rows []models.Execution) []string {
	n.props, n.labels = map[string]domain.PropertyType{}, map[string]string{}
	seen := map[string]bool{}
	var ids []string
	for _, ex := range rows {
		if !seen[ex.ActionTypeID] {
			seen[ex.ActionTypeID] = true
			if at, err := c.d.Store.ActionType(ctx, ex.ActionTypeID); err == nil {
				for _, in := range at.Inputs {
					n.props[at.ID+"/"+in.Name] = in.Type
					n.labels[at.ID+"/"+in.Name] = fieldLabel(in.DisplayName, in.Name)
				}
			}
		}
		for name, v := range ex.Parameters.V {
			ids = append(ids, refIDs(n.props[ex.ActionTypeID+"/"+name], v)...)
		}
		for _, e := range ex.Edits.V {
			if !seen[e.ObjectTypeID] {
				seen[e.ObjectTypeID] = true
				if ot, err := c.d.Store.ObjectType(ctx, e.ObjectTypeID); err == nil {
					for _, p := range ot.Properties {
						n.props[e.ObjectTypeID+"/"+p.Name] = p.Type.V
					}
				}
			}
			for k, v := range e.Before {
				ids = append(ids, refIDs(n.props[e.ObjectTypeID+"/"+k], v)...)
			}
			for k, v := range e.After {
				ids = append(ids, refIDs(n.props[e.ObjectTypeID+"/"+k], v)...)
			}
		}
	}
	return ids
}

// problem is one reason an execution was refused, as the form says it:
// the field by its label, the engine's message naming it so.
type problem struct{ Field, Label, Message string }

// problems lists a refusal's details for a person: each parameter by the
// label of the action's input (n.labels, read by valueNames), its
// message with the label in place of the parameter's name.
func problems(f *engine.Failure, actionID string, n rowNames) []problem {
	if f == nil {
		return nil
	}
	out := make([]problem, 0, len(f.Details))
	for _, d := range f.Details {
		name, isParam := strings.CutPrefix(d.Field, "parameters.")
		p := problem{Field: d.Field, Label: d.Field, Message: d.Message}
		if isParam {
			p.Label = name
			if l := n.labels[actionID+"/"+name]; l != "" {
				p.Label = l
			}
			p.Message = labelled(d.Message, name, p.Label)
		}
		out = append(out, p)
	}
	return out
}

// Problems are the execution's refusal, field by field.
func (v executionView) Problems() []problem {
	f, _ := v.Failure.(*engine.Failure)
	return problems(f, v.Execution.ActionTypeID, v.Names)
}
