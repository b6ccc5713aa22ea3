package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/internal/printable"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/ontology/domain"
	"github.com/ontoflow/ontoflow/workflows"
)

// PermAuditExecutions lets a user read every execution; others read their
// own.
const PermAuditExecutions = "executions:read"

// ActionDeps are what the action routes need.
type ActionDeps struct {
	Store     *ontology.Store
	Engine    *engine.Engine
	Starter   *workflows.Starter
	DB        *gorm.DB
	UIURL     string
	Namespace string
	// BatchMaxItems refuses larger batches (413); BatchSyncMax is the largest
	// batch answered synchronously; ExecuteTimeout bounds a synchronous
	// wait, after which the answer is 202.
	BatchMaxItems  int
	BatchSyncMax   int
	ExecuteTimeout time.Duration
	// LocalWorker says the engine's worker runs in this process (dev): a
	// synchronous execute then waits for the engine to settle the
	// execution instead of long-polling Temporal for the workflow's close.
	LocalWorker bool
}

// localGrace is how long a synchronous execute waits for the local worker
// before it also asks Temporal. The workflow task of an execution started
// here is handed to this process's worker (eager start), so the local
// answer comes unless that worker lost the task, e.g. to a retry elsewhere.
const localGrace = 5 * time.Second

type actionRoutes struct{ ActionDeps }

// ActionRoutes registers validate, execute, execute-batch, inline edit, the
// action log and notifications.
func ActionRoutes(d ActionDeps) func(g *gin.RouterGroup) {
	if d.ExecuteTimeout == 0 {
		d.ExecuteTimeout = time.Minute
	}
	if d.BatchMaxItems == 0 {
		d.BatchMaxItems = 10000
	}
	h := &actionRoutes{d}
	return func(g *gin.RouterGroup) {
		g.POST("/ontology/actions/:id/validate", h.validate)
		g.POST("/ontology/actions/:id/execute", h.execute)
		g.POST("/ontology/actions/:id/execute-batch", h.executeBatch)
		g.POST("/ontology/types/:type_id/objects/:object_id/properties/:property/inline-edit", h.inlineEdit)
		g.GET("/ontology/executions", h.listExecutions)
		g.GET("/ontology/executions/:id", h.getExecution)
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
func (h *actionRoutes) bind(c *gin.Context) (*engine.ActionType, executeRequest, bool) {
	var req executeRequest
	at, ok := h.actionType(c)
	if !ok {
		return nil, req, false
	}
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return nil, req, false
	}
	return at, req, true
}

func (h *actionRoutes) validate(c *gin.Context) {
	at, req, ok := h.bind(c)
	if !ok {
		return
	}
	p := principal(c)
	v, err := h.Engine.Check(c.Request.Context(), engine.Request{Action: at, Actor: p.User, Guest: p.Guest,
		TargetID: req.TargetObjectID, Parameters: req.Parameters, Justification: req.Justification})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
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

func requestHash(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		b, _ := json.Marshal(p)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (h *actionRoutes) newExecution(c *gin.Context, at *engine.ActionType, kind string, req executeRequest) *models.Execution {
	p := principal(c)
	id := uuid.NewString()
	return &models.Execution{
		ID: id, Kind: kind, WorkflowID: workflows.WorkflowID(at.Name, id),
		ActionTypeID: at.ID, ActionTypeName: at.Name, ActionVersion: at.Version,
		ActorID: p.User.ID, ActorName: p.User.Username, ActorGuest: p.Guest,
		TargetObjectID: req.TargetObjectID, Parameters: models.NewNumJSON(req.Parameters),
		Justification: req.Justification, Status: models.StatusQueued,
	}
}

func (h *actionRoutes) execute(c *gin.Context) {
	at, req, ok := h.bind(c)
	if !ok {
		return
	}
	h.submit(c, at, models.KindExecute, req, "")
}

// submit writes the execution row, starts its workflow and answers: 200
// with the finished execution, the typed error of a refused one, or 202
// when asked to or when the wait runs out. With an Idempotency-Key the same
// key and body return the same execution and never run it twice.
//
// hash identifies the request for the Idempotency-Key ("" = the action,
// kind and req); the inline edit passes the client's own request, since
// the parameters it derives from the object change with the object.
func (h *actionRoutes) submit(c *gin.Context, at *engine.ActionType, kind string, req executeRequest, hash string) {
	ctx := c.Request.Context()
	if req.TargetObjectID != "" && !domain.IsUUID(req.TargetObjectID) {
		// Object ids are UUIDs; anything else names no object (and would
		// not fit the action log's column).
		fail(c, apperr.New(apperr.ObjectNotFound, "object %q not found", req.TargetObjectID))
		return
	}
	ex := h.newExecution(c, at, kind, req)
	if key := c.GetHeader("Idempotency-Key"); key != "" {
		if len(key) > 255 || !printable.String(key) {
			fail(c, apperr.New(apperr.InvalidArgument, "Idempotency-Key must be at most 255 characters of UTF-8 text"))
			return
		}
		if hash == "" {
			hash = requestHash(at.ID, kind, req)
		}
		ex.IdempotencyKey, ex.RequestHash = &key, hash
		var prev models.Execution
		err := h.DB.WithContext(ctx).Where("actor_id = ? AND idempotency_key = ?", ex.ActorID, key).Take(&prev).Error
		if err == nil {
			h.replay(c, &prev, ex.RequestHash)
			return
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			fail(c, err)
			return
		}
	}
	if err := h.DB.WithContext(ctx).Create(ex).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) && ex.IdempotencyKey != nil {
			// A concurrent request with the same key won the insert.
			var prev models.Execution
			if err := h.DB.WithContext(ctx).Where("actor_id = ? AND idempotency_key = ?", ex.ActorID, *ex.IdempotencyKey).Take(&prev).Error; err == nil {
				h.replay(c, &prev, ex.RequestHash)
				return
			}
		}
		fail(c, err)
		return
	}
	var settled <-chan struct{}
	if h.LocalWorker && !wantsAsync(c) {
		var stop func()
		settled, stop = h.Engine.Settled(ex.ID)
		defer stop()
	}
	// The engine records the run id when the execution finishes, in the
	// write that finishes it.
	run, err := h.Starter.StartAction(ctx, ex)
	if err != nil {
		slog.ErrorContext(ctx, "start action workflow", "execution", ex.ID, "err", err)
		if ex.IdempotencyKey == nil {
			// Nobody can resume it: the row must not stay queued. If the
			// start did reach the server after all, the workflow finds
			// the row failed and applies nothing.
			_ = h.Engine.RecordFailure(context.WithoutCancel(ctx), ex.ID,
				engine.Failure{Code: string(apperr.Unavailable), Message: "the execution's workflow could not be started"})
		}
		fail(c, apperr.New(apperr.Unavailable, "the execution's workflow could not be started; retry (with the same Idempotency-Key, the same execution resumes)"))
		return
	}
	ex.RunID = run.GetRunID()
	h.await(c, ex, func(ctx context.Context) {
		if settled != nil {
			select {
			case <-settled:
				return
			case <-ctx.Done():
				return
			case <-time.After(localGrace):
			}
		}
		_ = run.Get(ctx, nil)
	})
}

// replay answers a repeated Idempotency-Key.
func (h *actionRoutes) replay(c *gin.Context, prev *models.Execution, hash string) {
	if prev.RequestHash != hash {
		fail(c, apperr.New(apperr.IdempotencyConflict, "Idempotency-Key was used with a different request (execution %s)", prev.ID))
		return
	}
	if prev.FinishedAt == nil && prev.Kind != models.KindBatch {
		// The first request may have written the row and failed (or
		// died) before its workflow started: start it now, or find the
		// run that exists.
		run, err := h.Starter.ResumeAction(c.Request.Context(), prev)
		if err != nil {
			slog.ErrorContext(c.Request.Context(), "resume action workflow", "execution", prev.ID, "err", err)
			fail(c, apperr.New(apperr.Unavailable, "the execution's workflow could not be started; retry with the same Idempotency-Key"))
			return
		}
		h.await(c, prev, func(ctx context.Context) { _ = run.Get(ctx, nil) })
		return
	}
	h.await(c, prev, func(ctx context.Context) {
		// Before it finishes, the row has no run id yet: wait on the
		// workflow's current run.
		_ = h.Starter.Run(prev.WorkflowID, prev.RunID).Get(ctx, nil)
	})
}

// await waits for an execution unless the caller asked for 202, then
// answers with its state.
func (h *actionRoutes) await(c *gin.Context, ex *models.Execution, wait func(ctx context.Context)) {
	async := wantsAsync(c)
	if !async {
		ctx, cancel := context.WithTimeout(c.Request.Context(), h.ExecuteTimeout)
		wait(ctx)
		cancel()
	}
	cur, err := h.load(c.Request.Context(), ex.ID)
	if err != nil {
		fail(c, err)
		return
	}
	h.answer(c, cur, async)
}

func (h *actionRoutes) load(ctx context.Context, id string) (*models.Execution, error) {
	var ex models.Execution
	err := h.DB.WithContext(ctx).Take(&ex, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.New(apperr.ExecutionNotFound, "execution %q not found", id)
	}
	return &ex, err
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
	v := &executionView{Execution: ex}
	if h.UIURL != "" && ex.WorkflowID != "" {
		v.WorkflowURL = strings.TrimRight(h.UIURL, "/") + "/namespaces/" + url.PathEscape(h.Namespace) +
			"/workflows/" + url.PathEscape(ex.WorkflowID)
	}
	if ex.Kind != models.KindBatch {
		return v, nil
	}
	t, err := h.Engine.Totals(ctx, ex.ID)
	if err != nil {
		return nil, err
	}
	v.Totals = t
	if items {
		var rows []models.Execution
		if err := h.DB.WithContext(ctx).Select("id", "batch_index", "status", "error_code", "error_message").
			Where("batch_id = ?", ex.ID).Order("batch_index").Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			v.Items = append(v.Items, batchItemView{Index: r.BatchIndex, ExecutionID: r.ID, Status: r.Status,
				ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage})
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
	n := len(req.Items)
	switch {
	case n == 0:
		fail(c, apperr.New(apperr.InvalidArgument, "items must hold at least one item"))
		return
	case n > h.BatchMaxItems:
		fail(c, apperr.New(apperr.BatchTooLarge, "a batch holds at most %d items, got %d", h.BatchMaxItems, n))
		return
	}
	batch := h.newExecution(c, at, models.KindBatch, executeRequest{Parameters: req.Parameters, Justification: req.Justification})
	batch.TotalItems = n
	items := make([]models.Execution, n)
	for i, it := range req.Items {
		params := map[string]any{}
		for k, v := range req.Parameters {
			params[k] = v
		}
		for k, v := range it.Parameters {
			params[k] = v
		}
		if it.TargetObjectID != "" && !domain.IsUUID(it.TargetObjectID) {
			fail(c, apperr.New(apperr.InvalidArgument, "items[%d].target_object_id %q is not an object id", i, it.TargetObjectID).
				WithDetails(apperr.Detail{Field: fmt.Sprintf("items[%d].target_object_id", i), Reason: "invalid", Message: "not an object id (a UUID)"}))
			return
		}
		ex := h.newExecution(c, at, models.KindBatchItem, executeRequest{TargetObjectID: it.TargetObjectID, Parameters: params, Justification: req.Justification})
		ex.WorkflowID, ex.BatchID, ex.BatchIndex = batch.WorkflowID, &batch.ID, i
		items[i] = *ex
	}
	ctx := c.Request.Context()
	err := h.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(batch).Error; err != nil {
			return err
		}
		return tx.CreateInBatches(items, 500).Error
	})
	if err != nil {
		fail(c, err)
		return
	}
	run, err := h.Starter.StartBatch(ctx, batch)
	if err != nil {
		fail(c, err)
		return
	}
	h.DB.WithContext(ctx).Model(batch).Update("run_id", run.GetRunID())
	if n > h.BatchSyncMax {
		c.Request.URL.RawQuery = "async=true"
	}
	h.await(c, batch, func(ctx context.Context) { _ = run.Get(ctx, nil) })
}

type inlineEditRequest struct {
	Value         any    `json:"value"`
	Justification string `json:"justification"`
}

// inlineEdit runs the property's configured update_object action with the
// new value, the action's other mapped inputs prefilled from the object's
// current values, through the same workflow as execute.
func (h *actionRoutes) inlineEdit(c *gin.Context) {
	ctx := c.Request.Context()
	var req inlineEditRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	prop, err := h.Store.Property(ctx, c.Param("type_id"), c.Param("property"))
	if err != nil {
		fail(c, err)
		return
	}
	cfg := prop.InlineEdit.V
	if cfg == nil {
		fail(c, apperr.New(apperr.InlineEditNotAllowed, "property %q has no inline_edit_config", prop.Name))
		return
	}
	at, err := h.Store.ActionType(ctx, cfg.ActionTypeID)
	if err != nil {
		fail(c, err)
		return
	}
	input, err := domain.ValidateInlineEdit(prop.ObjectTypeID, domain.PropertyInfo{Name: prop.Name, Type: prop.Type.V, Required: prop.Required, Unique: prop.Unique},
		*cfg, at.ActionDefinition)
	if err != nil {
		fail(c, domain.Retag(err, apperr.InvalidDefinition, apperr.InlineEditNotAllowed))
		return
	}
	obj, err := h.Store.GetObject(ctx, principal(c).User, c.Param("type_id"), c.Param("object_id"))
	if err != nil {
		fail(c, err)
		return
	}
	params := map[string]any{input: req.Value}
	for _, m := range at.PropertyMappings() {
		if m.Input == "" || m.Input == input {
			continue
		}
		if v, ok := obj.Properties.V[m.Property]; ok {
			params[m.Input] = v
		}
	}
	h.submit(c, at, models.KindInlineEdit, executeRequest{TargetObjectID: obj.ID, Parameters: params, Justification: req.Justification},
		requestHash(at.ID, models.KindInlineEdit, prop.ObjectTypeID, prop.Name, obj.ID, req.Value, req.Justification))
}

// mayAudit reports whether the caller reads every execution.
func mayAudit(p *auth.Principal) bool { return auth.HasPermission(p.User, PermAuditExecutions) }

func (h *actionRoutes) getExecution(c *gin.Context) {
	ex, err := h.load(c.Request.Context(), c.Param("id"))
	if err == nil && ex.ActorID != principal(c).User.ID && !mayAudit(principal(c)) {
		err = apperr.New(apperr.ExecutionNotFound, "execution %q not found", c.Param("id"))
	}
	if err != nil {
		fail(c, err)
		return
	}
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
	q := h.DB.WithContext(ctx).Model(&models.Execution{})
	if s := c.Query("action_type"); s != "" {
		if at, err := h.Store.ActionType(ctx, s); err == nil {
			s = at.ID
		}
		q = q.Where("action_type_id = ?", s)
	}
	if s := c.Query("actor"); s != "" {
		q = q.Where("actor_id = ? OR actor_name = ?", s, s)
	}
	if s := c.Query("target"); s != "" {
		q = q.Where("target_object_id = ?", s)
	}
	if s := c.Query("status"); s != "" {
		if !slices.Contains([]string{models.StatusQueued, models.StatusRunning, models.StatusSucceeded, models.StatusFailed, models.StatusPartial}, s) {
			fail(c, apperr.New(apperr.InvalidArgument, "status must be one of queued, running, succeeded, failed, partially_succeeded"))
			return
		}
		q = q.Where("status = ?", s)
	}
	if s := c.Query("batch"); s != "" {
		q = q.Where("batch_id = ?", s)
	}
	if s := c.Query("kind"); s != "" {
		if !slices.Contains([]string{models.KindExecute, models.KindBatch, models.KindBatchItem, models.KindInlineEdit, models.KindWhatIf}, s) {
			fail(c, apperr.New(apperr.InvalidArgument, "kind must be one of execute, batch, batch-item, inline-edit, what-if"))
			return
		}
		q = q.Where("kind = ?", s)
	}
	if s := c.Query("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			fail(c, apperr.New(apperr.InvalidArgument, "since must be an RFC 3339 timestamp"))
			return
		}
		q = q.Where("created_at >= ?", t.UTC())
	}
	if p := principal(c); !mayAudit(p) {
		q = q.Where("actor_id = ?", p.User.ID)
	}
	var rows []models.Execution
	if err := q.Order("created_at DESC, id").Offset(pr.Offset).Limit(pr.Limit + 1).Find(&rows).Error; err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, NewPage(pr, rows))
}

func (h *actionRoutes) listNotifications(c *gin.Context) {
	pr, err := ParsePage(c)
	if err != nil {
		fail(c, err)
		return
	}
	q := h.DB.WithContext(c.Request.Context()).Where("user_id = ?", principal(c).User.ID)
	if c.Query("unread") == "true" {
		q = q.Where("read_at IS NULL")
	}
	var rows []models.Notification
	if err := q.Order("created_at DESC, id").Offset(pr.Offset).Limit(pr.Limit + 1).Find(&rows).Error; err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, NewPage(pr, rows))
}

func (h *actionRoutes) markRead(c *gin.Context) {
	now := time.Now().UTC()
	res := h.DB.WithContext(c.Request.Context()).Model(&models.Notification{}).
		Where("id = ? AND user_id = ?", c.Param("id"), principal(c).User.ID).Update("read_at", &now)
	if res.Error != nil {
		fail(c, res.Error)
		return
	}
	if res.RowsAffected == 0 {
		fail(c, apperr.New(apperr.NotificationNotFound, "notification %q not found", c.Param("id")))
		return
	}
	c.Status(http.StatusNoContent)
}
