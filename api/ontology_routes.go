package api

import (
	"net/http"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// OntologyRoutes registers the ontology's routes under /ontology: object
// types and their properties, objects, link types and links, and action
// type definitions. Reads need only authentication (objects are further
// limited by marking and organization); every write needs the
// ontology:write permission. The action engine's routes
// (/ontology/actions/:id/validate|execute|execute-batch, inline edits and
// /ontology/executions) are registered by ActionRoutes.
func OntologyRoutes(store *ontology.Store) func(g *gin.RouterGroup) {
	h := &ontologyAPI{store: store}
	return func(g *gin.RouterGroup) {
		o := g.Group("/ontology")

		o.GET("/types", h.listObjectTypes)
		o.POST("/types", h.write, h.createObjectType)
		o.GET("/types/:type_id", h.getObjectType)
		o.PUT("/types/:type_id", h.write, h.updateObjectType)
		o.PATCH("/types/:type_id", h.write, h.patchObjectType)
		o.DELETE("/types/:type_id", h.write, h.deleteObjectType)

		o.GET("/types/:type_id/properties", h.listProperties)
		o.POST("/types/:type_id/properties", h.write, h.createProperty)
		o.GET("/types/:type_id/properties/:property", h.getProperty)
		o.PUT("/types/:type_id/properties/:property", h.write, h.updateProperty)
		o.PATCH("/types/:type_id/properties/:property", h.write, h.patchProperty)
		o.DELETE("/types/:type_id/properties/:property", h.write, h.deleteProperty)

		o.GET("/types/:type_id/objects", h.listObjects)
		o.POST("/types/:type_id/objects", h.write, h.createObject)
		o.GET("/types/:type_id/objects/:object_id", h.getObject)
		o.PUT("/types/:type_id/objects/:object_id", h.write, h.replaceObject)
		o.PATCH("/types/:type_id/objects/:object_id", h.write, h.patchObject)
		o.DELETE("/types/:type_id/objects/:object_id", h.write, h.deleteObject)
		o.GET("/types/:type_id/objects/:object_id/links", h.objectLinks)
		h.aggregateRoutes(o)

		o.GET("/link-types", h.listLinkTypes)
		o.POST("/link-types", h.write, h.createLinkType)
		o.GET("/link-types/:id", h.getLinkType)
		o.PUT("/link-types/:id", h.write, h.updateLinkType)
		o.PATCH("/link-types/:id", h.write, h.patchLinkType)
		o.DELETE("/link-types/:id", h.write, h.deleteLinkType)
		o.GET("/link-types/:id/links", h.listLinks)
		o.POST("/link-types/:id/links", h.write, h.createLink)
		o.GET("/links/:id", h.getLink)
		o.DELETE("/links/:id", h.write, h.deleteLink)

		o.GET("/actions", h.listActionTypes)
		o.POST("/actions", h.write, h.fullSession, h.createActionType)
		o.GET("/actions/:id", h.getActionType)
		o.PUT("/actions/:id", h.write, h.fullSession, h.updateActionType)
		o.PATCH("/actions/:id", h.write, h.fullSession, h.patchActionType)
		o.DELETE("/actions/:id", h.write, h.fullSession, h.deleteActionType)
	}
}

type ontologyAPI struct{ store *ontology.Store }

// write is the middleware of every mutating route.
func (h *ontologyAPI) write(c *gin.Context) {
	if !requirePermission(c, ontology.PermWrite) {
		return
	}
	c.Next()
}

// fullSession guards the action type writes: a definition holds secrets
// (webhook header values), and a guest session manages no secrets
// (auth.RequireFullSession); changing a webhook's URL alone would send
// them elsewhere.
func (h *ontologyAPI) fullSession(c *gin.Context) {
	if !requireFullSession(c, "create, change or delete action types (they hold webhook credentials)") {
		return
	}
	c.Next()
}

func ontoUser(c *gin.Context) *models.User { return principal(c).User }

// ontoReply renders v with status, or the error.
func ontoReply[T any](c *gin.Context, status int, v T, err error) {
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(status, v)
}

func ontoNoContent(c *gin.Context, err error) {
	if err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// ontoPage parses pagination; ok is false when it already failed the request.
func ontoPage(c *gin.Context) (PageRequest, bool) {
	pr, err := ParsePage(c)
	if err != nil {
		fail(c, err)
		return pr, false
	}
	return pr, true
}

func ontoList[T any](c *gin.Context, pr PageRequest, items []T, err error) {
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, NewPage(pr, items))
}

// ontoKeysetList answers a page the store cut, with its next token.
func ontoKeysetList[T any](c *gin.Context, items []T, next string, err error) {
	if err != nil {
		fail(c, err)
		return
	}
	if items == nil {
		items = []T{}
	}
	c.JSON(http.StatusOK, Page[T]{Data: items, NextPageToken: next})
}

// --- object types ---

func (h *ontologyAPI) listObjectTypes(c *gin.Context) {
	pr, ok := ontoPage(c)
	if !ok {
		return
	}
	q, ok := searchTerm(c)
	if !ok {
		return
	}
	items, err := h.store.ListObjectTypes(c.Request.Context(), q, pr.Offset, pr.Limit+1)
	ontoList(c, pr, items, err)
}

func (h *ontologyAPI) createObjectType(c *gin.Context) {
	var sp ontology.ObjectTypeSpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.As(ontoUser(c)).CreateObjectType(c.Request.Context(), ontoUser(c).ID, sp)
	ontoReply(c, http.StatusCreated, v, err)
}

func (h *ontologyAPI) getObjectType(c *gin.Context) {
	v, err := h.store.ObjectType(c.Request.Context(), c.Param("type_id"))
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) updateObjectType(c *gin.Context) {
	var sp ontology.ObjectTypeSpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.As(ontoUser(c)).UpdateObjectType(c.Request.Context(), c.Param("type_id"), sp)
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) patchObjectType(c *gin.Context) {
	var p ontology.Patch
	if err := decodeJSON(c, &p); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.As(ontoUser(c)).PatchObjectType(c.Request.Context(), c.Param("type_id"), p)
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) deleteObjectType(c *gin.Context) {
	ontoNoContent(c, h.store.DeleteObjectType(c.Request.Context(), c.Param("type_id")))
}

// --- properties ---

func (h *ontologyAPI) listProperties(c *gin.Context) {
	items, err := h.store.ListProperties(c.Request.Context(), c.Param("type_id"))
	// A type's properties are few: one page, no token.
	ontoReply(c, http.StatusOK, Page[models.Property]{Data: items}, err)
}

func (h *ontologyAPI) createProperty(c *gin.Context) {
	var sp ontology.PropertySpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.As(ontoUser(c)).CreateProperty(c.Request.Context(), c.Param("type_id"), sp)
	ontoReply(c, http.StatusCreated, v, err)
}

func (h *ontologyAPI) getProperty(c *gin.Context) {
	v, err := h.store.Property(c.Request.Context(), c.Param("type_id"), c.Param("property"))
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) updateProperty(c *gin.Context) {
	var sp ontology.PropertySpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.As(ontoUser(c)).UpdateProperty(c.Request.Context(), c.Param("type_id"), c.Param("property"), sp)
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) patchProperty(c *gin.Context) {
	var p ontology.Patch
	if err := decodeJSON(c, &p); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.As(ontoUser(c)).PatchProperty(c.Request.Context(), c.Param("type_id"), c.Param("property"), p)
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) deleteProperty(c *gin.Context) {
	ontoNoContent(c, h.store.DeleteProperty(c.Request.Context(), c.Param("type_id"), c.Param("property")))
}

// --- objects ---

// ontoFilters collects the filter.<property>[.<operator>] query
// parameters, refusing more than defaults.MaxFilters before building
// any (the store checks the same cap for its other callers).
func ontoFilters(c *gin.Context) ([]ontology.RawFilter, error) {
	q := c.Request.URL.Query()
	keys := make([]string, 0, len(q))
	n := 0
	for k, vs := range q {
		if strings.HasPrefix(k, "filter.") {
			keys = append(keys, k)
			n += len(vs)
		}
	}
	if n > defaults.MaxFilters {
		return nil, apperr.OverLimit("filter", defaults.MaxFilters, "filters", n)
	}
	sort.Strings(keys)
	out := make([]ontology.RawFilter, 0, n)
	for _, k := range keys {
		for _, v := range q[k] {
			out = append(out, ontology.RawFilter{Key: strings.TrimPrefix(k, "filter."), Value: v})
		}
	}
	return out, nil
}

// orderBy is the order_by parameter: one entry at most (a second one
// would be silently ignored otherwise).
func orderBy(c *gin.Context) (string, error) {
	vs := c.QueryArray("order_by")
	if len(vs) > defaults.MaxOrderBy {
		return "", apperr.OverLimit("order_by", defaults.MaxOrderBy, "entries", len(vs))
	}
	return c.Query("order_by"), nil
}

// objectQuery reads the object listing's parameters.
func objectQuery(c *gin.Context) (ontology.ObjectQuery, error) {
	size, err := PageSize(c)
	if err != nil {
		return ontology.ObjectQuery{}, err
	}
	ob, err := orderBy(c)
	if err != nil {
		return ontology.ObjectQuery{}, err
	}
	fs, err := ontoFilters(c)
	if err != nil {
		return ontology.ObjectQuery{}, err
	}
	return ontology.ObjectQuery{Filters: fs, OrderBy: ob, PageToken: c.Query("page_token"), Limit: size}, nil
}

// listObjects pages with keyset tokens (the store's): ?order_by= and
// page_token go to the store as they came; page_size as on every list.
func (h *ontologyAPI) listObjects(c *gin.Context) {
	q, err := objectQuery(c)
	if err != nil {
		fail(c, err)
		return
	}
	var p ontology.ObjectPage
	err = h.inBranch(c, func(s *ontology.Store) (err error) {
		p, err = s.ListObjectsPage(c.Request.Context(), ontoUser(c), c.Param("type_id"), q)
		return err
	})
	ontoKeysetList(c, p.Items, p.NextPageToken, err)
}

func (h *ontologyAPI) createObject(c *gin.Context) {
	var sp ontology.ObjectSpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.CreateObjectAs(c.Request.Context(), ontoUser(c), c.Param("type_id"), sp)
	ontoReply(c, http.StatusCreated, v, err)
}

func (h *ontologyAPI) getObject(c *gin.Context) {
	var v *models.Object
	err := h.inBranch(c, func(s *ontology.Store) (err error) {
		v, err = s.GetObject(c.Request.Context(), ontoUser(c), c.Param("type_id"), c.Param("object_id"))
		return err
	})
	ontoReply(c, http.StatusOK, v, err)
}

// inBranch runs read over the ontology, or, with ?branch={id}, over the
// ontology as that what-if branch (the caller's) shows it.
func (h *ontologyAPI) inBranch(c *gin.Context, read func(s *ontology.Store) error) error {
	b := c.Query("branch")
	if b == "" {
		return read(h.store)
	}
	return h.store.InBranch(c.Request.Context(), ontoUser(c), b, read)
}

func (h *ontologyAPI) replaceObject(c *gin.Context) {
	var sp ontology.ObjectSpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.ReplaceObjectAs(c.Request.Context(), ontoUser(c), c.Param("type_id"), c.Param("object_id"), sp)
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) patchObject(c *gin.Context) {
	var p ontology.ObjectPatch
	if err := decodeJSON(c, &p); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.PatchObjectAs(c.Request.Context(), ontoUser(c), c.Param("type_id"), c.Param("object_id"), p)
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) deleteObject(c *gin.Context) {
	ontoNoContent(c, h.store.DeleteObjectAs(c.Request.Context(), ontoUser(c), c.Param("type_id"), c.Param("object_id")))
}

// objectLinks pages with keyset tokens (the store's), which also accepts
// the offset tokens this route issued before them.
func (h *ontologyAPI) objectLinks(c *gin.Context) {
	size, err := PageSize(c)
	if err != nil {
		fail(c, err)
		return
	}
	var p ontology.LinkPage
	err = h.inBranch(c, func(s *ontology.Store) (err error) {
		p, err = s.ObjectLinksPage(c.Request.Context(), ontoUser(c), c.Param("type_id"), c.Param("object_id"),
			ontology.LinkQuery{LinkType: c.Query("link_type"), Direction: c.Query("direction"), PageToken: c.Query("page_token"), Limit: size})
		return err
	})
	ontoKeysetList(c, p.Items, p.NextPageToken, err)
}

// --- link types and links ---

func (h *ontologyAPI) listLinkTypes(c *gin.Context) {
	pr, ok := ontoPage(c)
	if !ok {
		return
	}
	q, ok := searchTerm(c)
	if !ok {
		return
	}
	items, err := h.store.ListLinkTypes(c.Request.Context(), c.Query("object_type"), q, pr.Offset, pr.Limit+1)
	ontoList(c, pr, items, err)
}

func (h *ontologyAPI) createLinkType(c *gin.Context) {
	var sp ontology.LinkTypeSpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.CreateLinkType(c.Request.Context(), ontoUser(c).ID, sp)
	ontoReply(c, http.StatusCreated, v, err)
}

func (h *ontologyAPI) getLinkType(c *gin.Context) {
	v, err := h.store.LinkType(c.Request.Context(), c.Param("id"))
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) updateLinkType(c *gin.Context) {
	var sp ontology.LinkTypeSpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.UpdateLinkType(c.Request.Context(), c.Param("id"), sp)
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) patchLinkType(c *gin.Context) {
	var p ontology.Patch
	if err := decodeJSON(c, &p); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.PatchLinkType(c.Request.Context(), c.Param("id"), p)
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) deleteLinkType(c *gin.Context) {
	ontoNoContent(c, h.store.DeleteLinkType(c.Request.Context(), c.Param("id")))
}

func (h *ontologyAPI) listLinks(c *gin.Context) {
	pr, ok := ontoPage(c)
	if !ok {
		return
	}
	items, err := h.store.ListLinks(c.Request.Context(), ontoUser(c), c.Param("id"), pr.Offset, pr.Limit+1)
	ontoList(c, pr, items, err)
}

func (h *ontologyAPI) createLink(c *gin.Context) {
	var sp ontology.LinkSpec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.CreateLinkAs(c.Request.Context(), ontoUser(c), c.Param("id"), sp)
	ontoReply(c, http.StatusCreated, v, err)
}

func (h *ontologyAPI) getLink(c *gin.Context) {
	v, err := h.store.GetLink(c.Request.Context(), ontoUser(c), c.Param("id"))
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) deleteLink(c *gin.Context) {
	ontoNoContent(c, h.store.DeleteLinkAs(c.Request.Context(), ontoUser(c), c.Param("id")))
}

// --- action types ---

func (h *ontologyAPI) listActionTypes(c *gin.Context) {
	pr, ok := ontoPage(c)
	if !ok {
		return
	}
	objectType := c.Query("object_type_id")
	if objectType == "" {
		objectType = c.Query("object_type")
	}
	q, ok := searchTerm(c)
	if !ok {
		return
	}
	items, err := h.store.ListActionTypes(c.Request.Context(), objectType, q, pr.Offset, pr.Limit+1)
	if err == nil && !canWriteOntology(c) {
		for i := range items {
			items[i].RedactSecrets()
		}
	}
	ontoList(c, pr, items, err)
}

// canWriteOntology reports whether the caller may change action types:
// ontology:write, from a full session. Others, guest sessions included,
// see them with their webhook header values redacted.
func canWriteOntology(c *gin.Context) bool {
	p := principal(c)
	return !p.Guest && auth.HasPermission(p.User, ontology.PermWrite)
}

func (h *ontologyAPI) createActionType(c *gin.Context) {
	var d domain.ActionDefinition
	if err := decodeJSON(c, &d); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.As(ontoUser(c)).CreateActionType(c.Request.Context(), ontoUser(c).ID, d)
	ontoReply(c, http.StatusCreated, v, err)
}

func (h *ontologyAPI) getActionType(c *gin.Context) {
	v, err := h.store.GetActionType(c.Request.Context(), c.Param("id"))
	if err == nil && !canWriteOntology(c) {
		v.RedactSecrets()
	}
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) updateActionType(c *gin.Context) {
	var d domain.ActionDefinition
	if err := decodeJSON(c, &d); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.As(ontoUser(c)).UpdateActionType(c.Request.Context(), c.Param("id"), d)
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) patchActionType(c *gin.Context) {
	var p ontology.Patch
	if err := decodeJSON(c, &p); err != nil {
		fail(c, err)
		return
	}
	v, err := h.store.As(ontoUser(c)).PatchActionType(c.Request.Context(), c.Param("id"), p)
	ontoReply(c, http.StatusOK, v, err)
}

func (h *ontologyAPI) deleteActionType(c *gin.Context) {
	ontoNoContent(c, h.store.DeleteActionType(c.Request.Context(), c.Param("id")))
}
