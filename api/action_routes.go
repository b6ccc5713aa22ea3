package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications"
	"github.com/ontoflow/ontoflow/ontology"
)

// ActionDeps are what the action routes need.
type ActionDeps struct {
	Store      *ontology.Store
	Executions *executions.Service
	// Inbox reads and marks the caller's in-app notifications.
	Inbox *notifications.Inbox
	// BatchSyncMax is the largest batch answered synchronously.
	BatchSyncMax int
}

type actionRoutes struct{ ActionDeps }

// ActionRoutes registers validate, execute, execute-batch, inline edit, the
// action log and notifications. The routes decode, call the executions
// service and render; the lifecycle is the service's.
func ActionRoutes(d ActionDeps) func(g *gin.RouterGroup) {
	h := &actionRoutes{d}
	return func(g *gin.RouterGroup) {
		g.POST("/ontology/actions/:id/validate", h.validate)
		g.POST("/ontology/actions/:id/form", h.form)
		g.POST("/ontology/actions/:id/execute", h.execute)
		g.POST("/ontology/actions/:id/execute-batch", h.executeBatch)
		g.POST("/ontology/types/:type_id/objects/:object_id/properties/:property/inline-edit", h.inlineEdit)
		g.GET("/ontology/executions", h.listExecutions)
		g.GET("/ontology/executions/:id", h.getExecution)
		g.POST("/ontology/executions/:id/revert", h.revert)
		g.GET("/notifications", h.listNotifications)
		g.POST("/notifications/:id/read", h.markRead)
	}
}

type executeRequest struct {
	TargetObjectID string         `json:"target_object_id"`
	Parameters     map[string]any `json:"parameters"`
	Justification  string         `json:"justification"`
}

func (h *actionRoutes) actionType(c *gin.Context) (*engine.ActionType, bool) {
	at, err := h.Store.ActionType(c.Request.Context(), c.Param("id"))
	if err != nil {
		fail(c, err)
		return nil, false
	}
	return at, true
}

// bind reads the action type of the path and the request body.
func (h *actionRoutes) bind(c *gin.Context) (*executions.Request, bool) {
	at, ok := h.actionType(c)
	if !ok {
		return nil, false
	}
	var req executeRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return nil, false
	}
	p := principal(c)
	return &executions.Request{Action: at, Actor: p.User, Guest: p.Guest, Kind: models.KindExecute,
		TargetID: req.TargetObjectID, Parameters: req.Parameters, Justification: req.Justification,
		IdempotencyKey: c.GetHeader("Idempotency-Key")}, true
}

func (h *actionRoutes) validate(c *gin.Context) {
	r, ok := h.bind(c)
	if !ok {
		return
	}
	v, err := h.Executions.Validate(c.Request.Context(), *r)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// form answers the action's form resolved for the target and the
// parameters typed so far (the body validate takes).
func (h *actionRoutes) form(c *gin.Context) {
	r, ok := h.bind(c)
	if !ok {
		return
	}
	f, err := h.Executions.Form(c.Request.Context(), *r)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, f)
}

// wantsAsync reads the respond-async preference (RFC 7240: preferences
// are comma-separated, each may carry ";"-parameters, and a request may
// send several Prefer headers) and ?async=true (or 1, t).
func wantsAsync(c *gin.Context) bool {
	if b, err := strconv.ParseBool(c.Query("async")); err == nil && b {
		return true
	}
	for _, h := range c.Request.Header.Values("Prefer") {
		for _, p := range strings.Split(h, ",") {
			name, _, _ := strings.Cut(p, ";")
			if strings.EqualFold(strings.TrimSpace(name), "respond-async") {
				return true
			}
		}
	}
	return false
}

func (h *actionRoutes) execute(c *gin.Context) {
	r, ok := h.bind(c)
	if !ok {
		return
	}
	h.submit(c, *r)
}

// submit submits r and answers: 200 with the finished execution, the typed
// error of a refused one, or 202 when asked to or when the wait runs out.
func (h *actionRoutes) submit(c *gin.Context, r executions.Request) {
	async := wantsAsync(c)
	hd, err := h.Executions.Submit(c.Request.Context(), r, !async)
	if err != nil {
		fail(c, err)
		return
	}
	h.await(c, hd, async)
}

// await waits for a submitted execution unless the caller asked for 202,
// then answers with its state.
func (h *actionRoutes) await(c *gin.Context, hd *executions.Handle, async bool) {
	var cur *models.Execution
	var err error
	if async {
		hd.Release()
		cur, err = h.Executions.Get(c.Request.Context(), hd.Execution.ID)
	} else {
		cur, err = h.Executions.Wait(c.Request.Context(), hd)
	}
	if err != nil {
		fail(c, err)
		return
	}
	h.answer(c, cur, async)
}

// executionView is an execution as the API shows it.
type executionView struct {
	*models.Execution
	WorkflowURL string              `json:"workflow_url,omitempty"`
	Totals      *engine.BatchTotals `json:"totals,omitempty"`
	Items       []batchItemView     `json:"items,omitempty"`
}

type batchItemView struct {
	Index        int    `json:"index"`
	ExecutionID  string `json:"execution_id"`
	Status       string `json:"status"`
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
}

func (h *actionRoutes) view(ctx context.Context, ex *models.Execution, items bool) (*executionView, error) {
	v := &executionView{Execution: ex, WorkflowURL: h.Executions.WorkflowURL(ex)}
	if ex.Kind != models.KindBatch {
		return v, nil
	}
	t, err := h.Executions.Totals(ctx, ex.ID)
	if err != nil {
		return nil, err
	}
	v.Totals = t
	if items {
		rows, err := h.Executions.BatchItems(ctx, ex.ID)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			item := batchItemView{Index: r.BatchIndex, ExecutionID: r.ID, Status: r.Status,
				ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage}
			if ex.Redacted {
				// A message may quote an item's parameters.
				item.ErrorMessage = ""
			}
			v.Items = append(v.Items, item)
		}
	}
	return v, nil
}

// answer renders an execution: 200 when it succeeded (or a batch closed),
// 202 with a Location while it runs, and the recorded typed error (its own
// status: 400, 403, 404, 409...) when it failed. A caller that asked for an
// asynchronous answer always gets 202: with the worker in this process an
// execution can finish before the answer is written, and such a client
// polls the Location whatever the state.
func (h *actionRoutes) answer(c *gin.Context, ex *models.Execution, async bool) {
	answeredExecution(c, ex)
	// Answered as GET /executions/{id} shows it to the caller: a delete's
	// edit records every link of its object, ends the caller may not read
	// included, so the actor's own answer must be redacted too.
	h.Store.RedactExecution(c.Request.Context(), principal(c), ex)
	v, err := h.view(c.Request.Context(), ex, ex.TotalItems <= min(h.BatchSyncMax, maxInlineItems))
	if err != nil {
		fail(c, err)
		return
	}
	switch {
	case async || ex.FinishedAt == nil:
		c.Header("Location", "/api/v1/ontology/executions/"+ex.ID)
		c.JSON(http.StatusAccepted, v)
	case ex.Status == models.StatusFailed && ex.Kind != models.KindBatch:
		e := apperr.New(apperr.Code(ex.ErrorCode), "%s", ex.ErrorMessage)
		var f engine.Failure
		if b, err := json.Marshal(ex.ErrorDetails.V); err == nil && json.Unmarshal(b, &f) == nil {
			e.Details = f.Details
		}
		e.Data = v
		fail(c, e)
	default:
		c.JSON(http.StatusOK, v)
	}
}

type batchRequest struct {
	Items []struct {
		TargetObjectID string         `json:"target_object_id"`
		Parameters     map[string]any `json:"parameters"`
	} `json:"items"`
	Parameters    map[string]any `json:"parameters"`
	Justification string         `json:"justification"`
}

func (h *actionRoutes) executeBatch(c *gin.Context) {
	at, ok := h.actionType(c)
	if !ok {
		return
	}
	var req batchRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	r := executions.BatchRequest{Action: at, Actor: p.User, Guest: p.Guest, Parameters: req.Parameters,
		Justification: req.Justification, IdempotencyKey: c.GetHeader("Idempotency-Key")}
	for _, it := range req.Items {
		r.Items = append(r.Items, executions.BatchItem{TargetID: it.TargetObjectID, Parameters: it.Parameters})
	}
	hd, err := h.Executions.SubmitBatch(c.Request.Context(), r)
	if err != nil {
		fail(c, err)
		return
	}
	h.await(c, hd, wantsAsync(c) || len(r.Items) > h.BatchSyncMax)
}

type inlineEditRequest struct {
	Value         any    `json:"value"`
	Justification string `json:"justification"`
}

// inlineEdit runs the property's configured update_object action with the
// new value, the action's other mapped inputs prefilled from the object's
// current values, through the same workflow as execute.
func (h *actionRoutes) inlineEdit(c *gin.Context) {
	var req inlineEditRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	r, err := h.Executions.InlineEditRequest(c.Request.Context(), executions.InlineEdit{Actor: p.User, Guest: p.Guest,
		ObjectTypeRef: c.Param("type_id"), ObjectID: c.Param("object_id"), Property: c.Param("property"),
		Value: req.Value, Justification: req.Justification, IdempotencyKey: c.GetHeader("Idempotency-Key")})
	if err != nil {
		fail(c, err)
		return
	}
	h.submit(c, *r)
}

// mayAudit reports whether the caller reads every execution.
func mayAudit(p *auth.Principal) bool {
	return auth.HasPermission(p.User, executions.PermAuditExecutions)
}

func (h *actionRoutes) getExecution(c *gin.Context) {
	ex, err := h.Executions.Get(c.Request.Context(), c.Param("id"))
	if err == nil && ex.ActorID != principal(c).User.ID && !mayAudit(principal(c)) {
		err = apperr.New(apperr.ExecutionNotFound, "execution %q not found", c.Param("id"))
	}
	if err != nil {
		fail(c, err)
		return
	}
	h.Store.RedactExecution(c.Request.Context(), principal(c), ex)
	// Large batches list their items through /executions?batch=<id>.
	v, err := h.view(c.Request.Context(), ex, ex.TotalItems <= maxInlineItems)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// maxInlineItems is the largest batch whose items GET /executions/{id}
// lists inline.
const maxInlineItems = 1000

func (h *actionRoutes) listExecutions(c *gin.Context) {
	ctx := c.Request.Context()
	pr, err := ParsePage(c)
	if err != nil {
		fail(c, err)
		return
	}
	f := executions.Filter{Actor: c.Query("actor"), Target: c.Query("target"), Status: c.Query("status"),
		Batch: c.Query("batch"), Kind: c.Query("kind")}
	if s := c.Query("action_type"); s != "" {
		f.ActionTypeID = s
		if at, err := h.Store.ActionType(ctx, s); err == nil {
			f.ActionTypeID = at.ID
		}
	}
	if f.Status != "" && !slices.Contains(executions.Statuses, f.Status) {
		fail(c, apperr.New(apperr.InvalidArgument, "status must be one of %s", strings.Join(executions.Statuses, ", ")))
		return
	}
	if f.Kind != "" && !slices.Contains(executions.Kinds, f.Kind) {
		fail(c, apperr.New(apperr.InvalidArgument, "kind must be one of %s", strings.Join(executions.Kinds, ", ")))
		return
	}
	if s := c.Query("since"); s != "" {
		if f.Since, err = time.Parse(time.RFC3339, s); err != nil {
			fail(c, apperr.New(apperr.InvalidArgument, "since must be an RFC 3339 timestamp"))
			return
		}
	}
	if p := principal(c); !mayAudit(p) {
		f.OnlyActorID = p.User.ID
	}
	rows, err := h.Executions.List(ctx, f, pr.Offset, pr.Limit+1)
	if err != nil {
		fail(c, err)
		return
	}
	h.Store.RedactExecutions(ctx, principal(c), rows)
	c.JSON(http.StatusOK, NewPage(pr, rows))
}

func (h *actionRoutes) listNotifications(c *gin.Context) {
	pr, err := ParsePage(c)
	if err != nil {
		fail(c, err)
		return
	}
	rows, err := h.Inbox.List(c.Request.Context(), principal(c).User.ID, c.Query("unread") == "true", pr.Offset, pr.Limit+1)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, NewPage(pr, rows))
}

func (h *actionRoutes) markRead(c *gin.Context) {
	if err := h.Inbox.MarkRead(c.Request.Context(), principal(c).User.ID, c.Param("id")); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

type revertRequest struct {
	Justification string `json:"justification"`
}

// revertBatchView answers the revert of a batch: each item's outcome.
type revertBatchView struct {
	Reverted string                  `json:"reverted"`
	Items    []executions.RevertItem `json:"items"`
}

// revert reverts an execution: a single one answers like execute (the
// revert execution, 200 when it finished); a batch answers each item's
// outcome.
func (h *actionRoutes) revert(c *gin.Context) {
	var req revertRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	r := executions.RevertRequest{ExecutionID: c.Param("id"), Actor: p.User, Guest: p.Guest,
		Justification: req.Justification, IdempotencyKey: c.GetHeader("Idempotency-Key")}
	if h.Executions.IsBatch(c.Request.Context(), r.ExecutionID) {
		items, err := h.Executions.RevertBatch(c.Request.Context(), r)
		if err != nil {
			fail(c, err)
			return
		}
		c.JSON(http.StatusOK, revertBatchView{Reverted: r.ExecutionID, Items: items})
		return
	}
	async := wantsAsync(c)
	hd, err := h.Executions.Revert(c.Request.Context(), r, !async)
	if err != nil {
		fail(c, err)
		return
	}
	h.await(c, hd, async)
}
