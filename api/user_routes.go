package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/users"
)

// PermUsersAdmin guards user management.
const PermUsersAdmin = "users:admin"

func (s *Server) users() *users.Store { return s.deps.Users }

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
	if !requirePermission(c, PermUsersAdmin) || !requireFullSession(c, "create users") {
		return
	}
	var sp users.Spec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	if err := s.users().CheckCreate(principal(c).User, &sp); err != nil {
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
	if !requirePermission(c, PermUsersAdmin) || !requireFullSession(c, "change users, their passwords or privileges") {
		return
	}
	var sp users.Spec
	if err := decodeJSON(c, &sp); err != nil {
		fail(c, err)
		return
	}
	// users:admin manages accounts; only the admin role grants privileges
	// or reaches accounts that hold more than the manager (users/privilege.go).
	if err := s.users().CheckUpdate(c.Request.Context(), principal(c).User, c.Param("id"), sp); err != nil {
		fail(c, err)
		return
	}
	u, err := s.users().Update(c.Request.Context(), c.Param("id"), sp)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, u)
}
