package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/models"
)

type branchRoutes struct{ *actionRoutes }

// BranchRoutes registers what-if and its branches: running an action on a
// branch, listing, reading, deleting and applying branches. As for the
// action routes, the lifecycle is the executions service's; the routes
// decode, call and render.
func BranchRoutes(d ActionDeps) func(g *gin.RouterGroup) {
	h := &branchRoutes{&actionRoutes{d}}
	return func(g *gin.RouterGroup) {
		g.POST("/ontology/actions/:id/what-if", h.whatIf)
		g.GET("/ontology/actions/:id/what-if", h.listActionBranches)
		g.GET("/ontology/branches", h.listBranches)
		g.GET("/ontology/branches/:id", h.getBranch)
		g.DELETE("/ontology/branches/:id", h.deleteBranch)
		g.POST("/ontology/branches/:id/apply", h.apply)
	}
}

type whatIfRequest struct {
	executeRequest
	BranchID string `json:"branch_id"`
}

func (h *branchRoutes) whatIf(c *gin.Context) {
	at, ok := h.actionType(c)
	if !ok {
		return
	}
	var req whatIfRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	r := executions.Request{Action: at, Actor: p.User, Guest: p.Guest, TargetID: req.TargetObjectID,
		Parameters: req.Parameters, Justification: req.Justification, IdempotencyKey: c.GetHeader("Idempotency-Key")}
	res, err := h.Executions.WhatIf(c.Request.Context(), r, req.BranchID)
	if err != nil {
		fail(c, err)
		return
	}
	h.whatIfAnswer(c, res)
}

// whatIfAnswer renders a what-if: the branch, the execution and, once it
// succeeded, each touched object before and after in the branch with a
// per-property diff, the links, the notifications that would be sent and
// the effect that would be performed. 201 with the branch's Location when
// the what-if opened it, 200 when it stacked onto one, the execution's
// typed error when refused, 202 while it still runs.
func (h *branchRoutes) whatIfAnswer(c *gin.Context, res *executions.WhatIfResult) {
	v, err := h.view(c.Request.Context(), res.Execution, false)
	if err != nil {
		fail(c, err)
		return
	}
	body := gin.H{"execution": v}
	if !res.Dropped {
		body["branch_id"], body["branch"] = res.Branch.ID, res.Branch
	}
	if res.Step != nil {
		body["position"] = res.Step.Position
		for k, x := range res.Step.Preview.V {
			body[k] = x
		}
	}
	ex := res.Execution
	switch {
	case ex.FinishedAt == nil:
		c.Header("Location", "/api/v1/ontology/executions/"+ex.ID)
		c.JSON(http.StatusAccepted, body)
	case ex.Status == models.StatusFailed:
		e := apperr.New(apperr.Code(ex.ErrorCode), "%s", ex.ErrorMessage)
		e.Data = body
		fail(c, e)
	case res.Created:
		c.Header("Location", "/api/v1/ontology/branches/"+res.Branch.ID)
		c.JSON(http.StatusCreated, body)
	default:
		c.JSON(http.StatusOK, body)
	}
}

// listActionBranches lists the caller's branches with a step of the
// action (?target_object_id= narrows to steps on that object).
func (h *branchRoutes) listActionBranches(c *gin.Context) {
	at, ok := h.actionType(c)
	if !ok {
		return
	}
	h.listWith(c, executions.BranchFilter{OwnerID: principal(c).User.ID, ActionTypeID: at.ID,
		TargetID: c.Query("target_object_id")})
}

// listBranches lists the caller's branches (an admin's: everyone's).
func (h *branchRoutes) listBranches(c *gin.Context) {
	f := executions.BranchFilter{}
	if u := principal(c).User; !u.IsAdmin() {
		f.OwnerID = u.ID
	}
	h.listWith(c, f)
}

func (h *branchRoutes) listWith(c *gin.Context, f executions.BranchFilter) {
	pr, err := ParsePage(c)
	if err != nil {
		fail(c, err)
		return
	}
	rows, err := h.Executions.ListBranches(c.Request.Context(), f, pr.Offset, pr.Limit+1)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, NewPage(pr, rows))
}

func (h *branchRoutes) getBranch(c *gin.Context) {
	v, err := h.Executions.GetBranch(c.Request.Context(), principal(c).User, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

func (h *branchRoutes) deleteBranch(c *gin.Context) {
	if err := h.Executions.DeleteBranch(c.Request.Context(), principal(c).User, c.Param("id")); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

type applyRequest struct {
	Revalidate bool `json:"revalidate"`
}

// apply runs the branch's stacked actions for real (an empty body is
// {"revalidate": false}).
func (h *branchRoutes) apply(c *gin.Context) {
	var req applyRequest
	if c.Request.ContentLength != 0 {
		if err := decodeJSON(c, &req); err != nil {
			fail(c, err)
			return
		}
	}
	p := principal(c)
	res, err := h.Executions.Apply(c.Request.Context(), executions.ApplyRequest{Actor: p.User, Guest: p.Guest,
		BranchID: c.Param("id"), Revalidate: req.Revalidate})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}
