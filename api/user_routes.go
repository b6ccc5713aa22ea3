package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/users"
)

// PermUsersAdmin guards user management.
const PermUsersAdmin = "users:admin"

func (s *Server) users() *users.Store { return &users.Store{DB: s.deps.DB, Levels: s.deps.Levels} }

func (s *Server) registerUserRoutes(g *gin.RouterGroup) {
	g.GET("/users", s.listUsers)
	g.POST("/users", s.createUser)
	g.GET("/users/:id", s.getUser)
	g.PATCH("/users/:id", s.updateUser)
}

func (s *Server) listUsers(c *gin.Context) {
	if !requirePermission(c, PermUsersAdmin) {
		return
	}
	pr, err := ParsePage(c)
	if err != nil {
		fail(c, err)
		return
	}
	us, err := s.users().List(c.Request.Context(), pr.Offset, pr.Limit+1)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, NewPage[models.User](pr, us))
}

func (s *Server) createUser(c *gin.Context) {
	if !requirePermission(c, PermUsersAdmin) {
		return
	}
	var sp users.Spec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	u, err := s.users().Create(c.Request.Context(), sp)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, u)
}

func (s *Server) getUser(c *gin.Context) {
	p := principal(c)
	id := c.Param("id")
	if id != p.User.ID && id != p.User.Username && !requirePermission(c, PermUsersAdmin) {
		return
	}
	u, err := s.users().Get(c.Request.Context(), id)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, u)
}

func (s *Server) updateUser(c *gin.Context) {
	if !requirePermission(c, PermUsersAdmin) {
		return
	}
	var sp users.Spec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	// users:admin manages accounts; only the admin role grants roles,
	// permissions or clearance, or changes an admin's account, so the
	// permission cannot be turned into the admin role.
	if p := principal(c); !p.User.IsAdmin() {
		target, err := s.users().Get(c.Request.Context(), c.Param("id"))
		if err != nil {
			fail(c, err)
			return
		}
		if target.IsAdmin() || target.ID == p.User.ID || sp.Roles != nil || sp.Permissions != nil || sp.Clearance != nil {
			fail(c, apperr.New(apperr.PermissionDenied, "only an admin may change roles, permissions or clearance, an admin's account, or their own"))
			return
		}
	}
	u, err := s.users().Update(c.Request.Context(), c.Param("id"), sp)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, u)
}
