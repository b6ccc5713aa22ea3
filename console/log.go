package console

import (
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
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
	n := rowNames{Actions: actions}
	var ids []string
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
	v.Names = c.rowNames(g, names, []models.Execution{*ex})
	c.page(g, http.StatusOK, "execution", v.Names.Action(*ex), v)
}
