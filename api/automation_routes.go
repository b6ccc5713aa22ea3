package api

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/automations"
)

// AutomationRoutes registers the caller's automation definitions under
// /automations. The creator is the owner; an automation of another user
// answers 404, as a missing one does.
func AutomationRoutes(s *automations.Store) func(g *gin.RouterGroup) {
	return func(g *gin.RouterGroup) {
		g.GET("/automations", func(c *gin.Context) {
			list, err := s.List(c.Request.Context(), principal(c).User.ID)
			if err != nil {
				fail(c, err)
				return
			}
			c.JSON(http.StatusOK, gin.H{"automations": list})
		})
		g.POST("/automations", func(c *gin.Context) {
			var sp automations.Spec
			if err := decodeJSON(c, &sp); err != nil {
				fail(c, err)
				return
			}
			v, err := s.Create(c.Request.Context(), principal(c).User.ID, sp)
			if err != nil {
				fail(c, err)
				return
			}
			c.Header("Location", "/api/v1/automations/"+v.ID)
			c.JSON(http.StatusCreated, v)
		})
		g.GET("/automations/:id", func(c *gin.Context) {
			answer(c, http.StatusOK)(s.Get(c.Request.Context(), principal(c).User.ID, c.Param("id")))
		})
		g.PUT("/automations/:id", func(c *gin.Context) {
			var sp automations.Spec
			if err := decodeJSON(c, &sp); err != nil {
				fail(c, err)
				return
			}
			answer(c, http.StatusOK)(s.Update(c.Request.Context(), principal(c).User.ID, c.Param("id"), sp))
		})
		g.POST("/automations/:id/pause", func(c *gin.Context) {
			answer(c, http.StatusOK)(s.SetPaused(c.Request.Context(), principal(c).User.ID, c.Param("id"), true))
		})
		g.POST("/automations/:id/resume", func(c *gin.Context) {
			answer(c, http.StatusOK)(s.SetPaused(c.Request.Context(), principal(c).User.ID, c.Param("id"), false))
		})
		g.GET("/automations/:id/firings", func(c *gin.Context) {
			limit, err := queryLimit(c)
			if err != nil {
				fail(c, err)
				return
			}
			list, err := s.Firings(c.Request.Context(), principal(c).User.ID, c.Param("id"), limit)
			if err != nil {
				fail(c, err)
				return
			}
			c.JSON(http.StatusOK, gin.H{"firings": list})
		})
		g.DELETE("/automations/:id", func(c *gin.Context) {
			if err := s.Delete(c.Request.Context(), principal(c).User.ID, c.Param("id")); err != nil {
				fail(c, err)
				return
			}
			c.Status(http.StatusNoContent)
		})
	}
}

// queryLimit reads ?limit (absent: 0, the store's default).
func queryLimit(c *gin.Context) (int, error) {
	v := c.Query("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, apperr.New(apperr.InvalidArgument, "limit: %q is not a positive number", v)
	}
	return n, nil
}

// answer writes v with status, or err in the error shape.
func answer(c *gin.Context, status int) func(v *automations.View, err error) {
	return func(v *automations.View, err error) {
		if err != nil {
			fail(c, err)
			return
		}
		c.JSON(status, v)
	}
}
