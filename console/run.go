package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/revert"
)

// resultView is the answer to Run: the execution as recorded, or why it
// did not run, and the form again (its messages beside the fields).
type resultView struct {
	Execution   *models.Execution
	Names       rowNames
	WorkflowURL string
	Failure     *engine.Failure
	Refusal     *refusalView
	Form        *formView
	CanUndo     bool
	CSRF        string
	Message     string
}

// run submits the form through the executions service, as POST
// /execute does, and waits for the execution.
func (c *Console) run(g *gin.Context) {
	ctx := g.Request.Context()
	ps, ok := c.readPosted(g)
	if !ok {
		return
	}
	in := ps.in
	rv := resultView{CSRF: g.GetString(csrfKey)}
	if len(ps.bad) > 0 {
		rv.Message = "Some fields could not be read; see the messages beside them."
		c.renderResult(g, rv, in)
		return
	}
	// One rule on every path (docs/console.md, "What becomes an
	// execution"): a request to run that reaches the executions service
	// is recorded, refused or not, as POST /execute records it; what no
	// service could read (a field that does not parse, as a body that is
	// no JSON) and a form that cannot be shown (no target, refused by
	// policy: there is no Run button) are answered here and recorded
	// nowhere. The live evaluation as one types is no request to run.
	fv, err := c.evaluate(g, in)
	if err != nil {
		c.fail(g, err)
		return
	}
	if !fv.Ready || fv.Refusal != nil {
		rv.Message = notRunMessage(fv)
		rv.Form = fv
		c.fragment(g, "result", rv)
		return
	}
	hd, err := c.d.Executions.Submit(ctx, c.postedRequest(g, ps), true)
	if err != nil {
		c.submitFailed(g, rv, in, err)
		return
	}
	ex, err := c.d.Executions.Wait(ctx, hd)
	if err != nil {
		c.fail(g, err)
		return
	}
	rv.Execution, rv.WorkflowURL = ex, c.d.Executions.WorkflowURL(ex)
	at := ps.at
	rv.Names = c.valueNames(g, map[string]string{at.ID: displayName(at.DisplayName, at.Name)}, []models.Execution{*ex})
	rv.CanUndo = c.canUndo(ctx, principal(g).User, ex)
	rv.Failure = failureOf(ex)
	if rv.Failure != nil && rv.Failure.Code == string(apperr.PermissionDenied) {
		rv.Refusal = &refusalView{Message: rv.Failure.Message, Reason: firstReason(rv.Failure.Details)}
	}
	c.renderResult(g, rv, in)
}

// Problems are the run's refusal, field by field.
func (rv resultView) Problems() []problem {
	id := ""
	if rv.Execution != nil {
		id = rv.Execution.ActionTypeID
	}
	return problems(rv.Failure, id, rv.Names)
}

// notRunMessage says why Run did nothing.
func notRunMessage(fv *formView) string {
	switch {
	case fv.Refusal != nil:
		return "Nothing was run: you may not run this action (see above)."
	case !fv.Ready:
		return "Nothing was run: " + fv.Notice
	}
	return "Nothing was run: some fields need attention; see the messages beside them."
}

func (c *Console) submitFailed(g *gin.Context, rv resultView, in formInput, err error) {
	ae, ok := apperr.As(err)
	if !ok {
		c.fail(g, err)
		return
	}
	rv.Failure = &engine.Failure{Code: string(ae.Code), Message: ae.Message, Details: ae.Details}
	c.renderResult(g, rv, in)
}

// renderResult renders the result and, out of band, the form evaluated
// again with every message (so a missing required field says so beside
// it, and a succeeded run shows the form over the changed target).
func (c *Console) renderResult(g *gin.Context, rv resultView, in formInput) {
	fv, err := c.evaluate(g, in)
	if err != nil {
		c.fail(g, err)
		return
	}
	if rv.Execution != nil && rv.Execution.Status == models.StatusSucceeded {
		// The run consumed the values; messages about them are stale.
		in.Submitted = false
		if fv, err = c.evaluate(g, in); err != nil {
			c.fail(g, err)
			return
		}
	}
	if rv.Failure != nil && rv.Failure.Code == string(apperr.JustificationRequired) {
		fv.JustError = rv.Failure.Message
	}
	rv.Form = fv
	c.fragment(g, "result", rv)
}

// failureOf reads the refusal an execution recorded (nil unless failed).
func failureOf(ex *models.Execution) *engine.Failure {
	if ex.Status != models.StatusFailed {
		return nil
	}
	f := &engine.Failure{Code: ex.ErrorCode, Message: ex.ErrorMessage}
	if b, err := json.Marshal(ex.ErrorDetails.V); err == nil {
		var rec engine.Failure
		if json.Unmarshal(b, &rec) == nil {
			f.Details = rec.Details
		}
	}
	return f
}

func firstReason(ds []apperr.Detail) string {
	if len(ds) == 0 {
		return ""
	}
	return ds[0].Reason
}

type previewView struct {
	Result  *PreviewResult
	Failure *engine.Failure
}

// preview runs the what-if through Deps.Preview (when wired).
func (c *Console) preview(g *gin.Context) {
	if c.d.Preview == nil {
		c.errorPage(g, http.StatusNotFound, "Preview is not available in this build.")
		return
	}
	ps, ok := c.readPosted(g)
	if !ok {
		return
	}
	res, err := c.d.Preview(g.Request.Context(), c.postedRequest(g, ps))
	var pv previewView
	if ae, ok := apperr.As(err); ok {
		pv.Failure = &engine.Failure{Code: string(ae.Code), Message: ae.Message, Details: ae.Details}
	} else if err != nil {
		c.fail(g, err)
		return
	}
	pv.Result = res
	c.titlePreview(g, res)
	c.fragment(g, "preview", pv)
}

// titlePreview names the preview's objects that exist and the user may
// read by their titles (an object the what-if would create has none yet).
func (c *Console) titlePreview(g *gin.Context, res *PreviewResult) {
	if res == nil {
		return
	}
	var ids []string
	for _, o := range res.Objects {
		ids = append(ids, o.ObjectID)
	}
	refs, err := c.d.Store.ObjectTitles(g.Request.Context(), principal(g).User, ids)
	if err != nil {
		c.d.Logger.WarnContext(g.Request.Context(), "name the objects of a preview", "err", err)
	}
	for i := range res.Objects {
		res.Objects[i].Title = refs[res.Objects[i].ObjectID].Title
	}
}

// canUndo says whether the page offers Undo for ex: the revert service
// would take it now (revert.Check: the kind, success, not reverted,
// the action's allow_revert, the actor or executions:revert). A revert
// may still be refused when it runs (an object changed since).
func (c *Console) canUndo(ctx context.Context, u *models.User, ex *models.Execution) bool {
	if c.d.Undo == nil || ex == nil {
		return false
	}
	at, err := c.d.Store.ActionType(ctx, ex.ActionTypeID)
	if err != nil {
		at = nil // a deleted action type: the revert service decides
	}
	return revert.Check(u, ex, at) == nil
}

// undo reverts an execution through Deps.Undo (when wired).
func (c *Console) undo(g *gin.Context) {
	if c.d.Undo == nil {
		c.errorPage(g, http.StatusNotFound, "Undo is not available in this build.")
		return
	}
	ex, err := c.d.Undo(g.Request.Context(), principal(g), g.Param("id"), g.PostForm("justification"))
	rv := resultView{CSRF: g.GetString(csrfKey)}
	if ae, ok := apperr.As(err); ok {
		rv.Failure = &engine.Failure{Code: string(ae.Code), Message: ae.Message, Details: ae.Details}
	} else if err != nil {
		c.fail(g, errors.Join(errors.New("undo"), err))
		return
	} else {
		rv.Execution, rv.WorkflowURL, rv.Failure = ex, c.d.Executions.WorkflowURL(ex), failureOf(ex)
		rv.Names = c.valueNames(g, nil, []models.Execution{*ex})
	}
	c.fragment(g, "undo-result", rv)
}

// posted is a submitted action form as run and preview read it: the
// form's input, the action type it names and the parameters parsed by the
// type's inputs (bad: the fields that could not be read).
type posted struct {
	in     formInput
	at     *engine.ActionType
	params map[string]any
	bad    map[string]string
}

// readPosted reads the submitted form; an action type that cannot be read
// is rendered as the failure, and ok is false.
func (c *Console) readPosted(g *gin.Context) (_ posted, ok bool) {
	in := postedInput(g, true)
	at, err := c.d.Store.ActionType(g.Request.Context(), in.ActionID)
	if err != nil {
		c.fail(g, err)
		return posted{}, false
	}
	params, bad := parseParams(at.Inputs, in.Raw)
	return posted{in: in, at: at, params: params, bad: bad}, true
}

// postedRequest is the executions request of the posted form, by the
// signed-in user.
func (c *Console) postedRequest(g *gin.Context, ps posted) executions.Request {
	p := principal(g)
	return c.request(ps.at, p.User, p.Guest, ps.in.TargetID, ps.params, ps.in.Justification)
}
