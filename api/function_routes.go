package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/functions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// FunctionRoutes registers /functions: reading packages, sources, runs
// and metrics needs functions:read (or functions:write); creating,
// publishing, deleting versions and test runs need functions:write and a
// full session.
func FunctionRoutes(svc *functions.Service, store *ontology.Store) func(g *gin.RouterGroup) {
	h := &functionsAPI{svc: svc, reads: functions.NewReads(store)}
	return func(g *gin.RouterGroup) {
		g.GET("/functions", h.read, h.list)
		g.POST("/functions", h.write, h.create)
		g.GET("/functions/:name", h.read, h.get)
		g.POST("/functions/:name/versions", h.write, h.publish)
		g.GET("/functions/:name/versions/:version", h.read, h.version)
		g.DELETE("/functions/:name/versions/:version", h.write, h.deleteVersion)
		g.POST("/functions/:name/versions/:version/test", h.write, h.test)
		g.GET("/functions/:name/runs", h.read, h.runs)
		g.GET("/functions/:name/metrics", h.read, h.metrics)
	}
}

type functionsAPI struct {
	svc   *functions.Service
	reads *functions.Reads
}

func (h *functionsAPI) read(c *gin.Context) {
	if u := principal(c).User; !auth.HasPermission(u, functions.PermRead) && !auth.HasPermission(u, functions.PermWrite) {
		requirePermission(c, functions.PermRead)
		return
	}
	c.Next()
}

// write guards every functions:write route. A guest session is refused
// (docs/security.md): a package's code runs with each actor's reads and,
// with network, calls out, so writing one is as sensitive as an action
// type's webhook.
func (h *functionsAPI) write(c *gin.Context) {
	if requirePermission(c, functions.PermWrite) && requireFullSession(c, "create, publish, delete or test function packages") {
		c.Next()
	}
}

func (h *functionsAPI) create(c *gin.Context) {
	var sp functions.PackageSpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	p, err := h.svc.CreatePackage(c.Request.Context(), principal(c).User, sp)
	if err == nil {
		c.Header("Location", "/api/v1/functions/"+p.Name)
	}
	ontoReply(c, http.StatusCreated, p, err)
}

func (h *functionsAPI) list(c *gin.Context) {
	pr, ok := ontoPage(c)
	if !ok {
		return
	}
	rows, err := h.svc.ListPackages(c.Request.Context(), pr.Offset, pr.Limit+1)
	ontoList[models.FunctionPackage](c, pr, rows, err)
}

func (h *functionsAPI) get(c *gin.Context) {
	p, err := h.svc.GetPackage(c.Request.Context(), c.Param("name"))
	ontoReply(c, http.StatusOK, p, err)
}

func (h *functionsAPI) publish(c *gin.Context) {
	var sp functions.VersionSpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	v, err := h.svc.Publish(c.Request.Context(), principal(c).User, c.Param("name"), sp)
	if err == nil {
		c.Header("Location", "/api/v1/functions/"+c.Param("name")+"/versions/"+v.Version)
	}
	ontoReply(c, http.StatusCreated, v, err)
}

func (h *functionsAPI) version(c *gin.Context) {
	v, err := h.svc.GetVersion(c.Request.Context(), c.Param("name"), c.Param("version"))
	ontoReply(c, http.StatusOK, v, err)
}

func (h *functionsAPI) deleteVersion(c *gin.Context) {
	ontoNoContent(c, h.svc.DeleteVersion(c.Request.Context(), c.Param("name"), c.Param("version")))
}

func (h *functionsAPI) test(c *gin.Context) {
	var in functions.TestInput
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	res, err := h.svc.Test(c.Request.Context(), principal(c).User, h.reads, c.Param("name"), c.Param("version"), in)
	ontoReply(c, http.StatusOK, res, err)
}

// since reads ?since= (RFC 3339), def when absent.
func since(c *gin.Context, def time.Time) (time.Time, error) {
	s := c.Query("since")
	if s == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, apperr.New(apperr.InvalidArgument, "since must be an RFC 3339 time, got %q", s).
			WithDetails(apperr.Detail{Field: "since", Reason: "format", Message: "RFC 3339"})
	}
	return t, nil
}

func (h *functionsAPI) runs(c *gin.Context) {
	pr, ok := ontoPage(c)
	if !ok {
		return
	}
	t, err := since(c, time.Time{})
	if err != nil {
		fail(c, err)
		return
	}
	// A misspelt status would list nothing, which reads as "no failures".
	if st := c.Query("status"); st != "" && st != functions.StatusSucceeded && st != functions.StatusFailed {
		fail(c, apperr.New(apperr.InvalidArgument, "status must be %s or %s, got %q", functions.StatusSucceeded, functions.StatusFailed, st).
			WithDetails(apperr.Detail{Field: "status", Reason: "value", Message: "succeeded or failed"}))
		return
	}
	rows, err := h.svc.Runs(c.Request.Context(), principal(c).User, h.reads, c.Param("name"), functions.RunFilter{Status: c.Query("status"),
		Version: c.Query("version"), Since: t, Offset: pr.Offset, Limit: pr.Limit + 1})
	ontoList[models.FunctionRun](c, pr, rows, err)
}

func (h *functionsAPI) metrics(c *gin.Context) {
	t, err := since(c, time.Now().Add(-7*24*time.Hour))
	if err != nil {
		fail(c, err)
		return
	}
	m, err := h.svc.Metrics(c.Request.Context(), principal(c).User, h.reads, c.Param("name"), t)
	ontoReply(c, http.StatusOK, gin.H{"package": c.Param("name"), "since": t, "versions": m}, err)
}
