package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
)

// SecretRoutes registers /secrets: names and metadata (the use policy
// included) are readable with secrets:read (or secrets:write); creating,
// updating and deleting, and setting who may use a secret and where it
// may be sent, need secrets:write and a full session (a guest session is
// refused). A value goes in and is never answered, not at creation and
// not to admins.
func SecretRoutes(store *secrets.Store) func(g *gin.RouterGroup) {
	h := &secretsAPI{store: store}
	return func(g *gin.RouterGroup) {
		g.GET("/secrets", h.read, h.list)
		g.POST("/secrets", h.write, h.create)
		g.GET("/secrets/:name", h.read, h.get)
		g.PUT("/secrets/:name", h.write, h.update)
		g.DELETE("/secrets/:name", h.write, h.delete)
	}
}

type secretsAPI struct{ store *secrets.Store }

func (h *secretsAPI) read(c *gin.Context) {
	if u := principal(c).User; !auth.HasPermission(u, secrets.PermRead) && !auth.HasPermission(u, secrets.PermWrite) {
		requirePermission(c, secrets.PermRead)
		return
	}
	c.Next()
}

func (h *secretsAPI) write(c *gin.Context) {
	if !requirePermission(c, secrets.PermWrite) {
		return
	}
	if principal(c).Guest {
		fail(c, apperr.New(apperr.PermissionDenied, "a guest session may not manage secrets").
			WithDetails(apperr.Detail{Reason: "guest_session", Message: "use a full session"}))
		return
	}
	c.Next()
}

// secretCreate is the body of POST /secrets: a name, then what PUT
// takes (the value, the description and the use policy).
type secretCreate struct {
	Name string `json:"name"`
	secrets.Spec
}

func (h *secretsAPI) create(c *gin.Context) {
	var req secretCreate
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	row, err := h.store.Create(c.Request.Context(), req.Name, req.Spec, principal(c).User.ID)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", "/api/v1/secrets/"+row.Name)
	c.JSON(http.StatusCreated, row)
}

func (h *secretsAPI) update(c *gin.Context) {
	var sp secrets.Spec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	row, err := h.store.Update(c.Request.Context(), c.Param("name"), sp, principal(c).User.ID)
	ontoReply(c, http.StatusOK, row, err)
}

func (h *secretsAPI) get(c *gin.Context) {
	row, err := h.store.Get(c.Request.Context(), c.Param("name"))
	ontoReply(c, http.StatusOK, row, err)
}

func (h *secretsAPI) list(c *gin.Context) {
	pr, ok := ontoPage(c)
	if !ok {
		return
	}
	rows, err := h.store.List(c.Request.Context(), pr.Offset, pr.Limit+1)
	ontoList[models.Secret](c, pr, rows, err)
}

func (h *secretsAPI) delete(c *gin.Context) {
	ontoNoContent(c, h.store.Delete(c.Request.Context(), c.Param("name")))
}
