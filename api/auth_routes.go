package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/users"
)

type tokenRequest struct {
	Name       string `json:"name"`
	TTLSeconds int64  `json:"ttl_seconds"`
	Guest      bool   `json:"guest"`
}

type tokenResponse struct {
	Token string           `json:"token"`
	Info  *models.APIToken `json:"token_info"`
}

func (s *Server) registerAuthRoutes(g *gin.RouterGroup) {
	g.POST("/auth/tokens", s.issueToken)
	g.GET("/auth/tokens", s.listTokens)
	g.DELETE("/auth/tokens/:id", s.revokeToken)
	g.POST("/auth/app-passwords", s.createAppPassword)
	g.GET("/auth/app-passwords", s.listAppPasswords)
	g.DELETE("/auth/app-passwords/:id", s.revokeAppPassword)
	g.GET("/me", func(c *gin.Context) {
		p := principal(c)
		c.JSON(http.StatusOK, gin.H{"user": p.User, "guest": p.Guest, "auth_method": p.Method})
	})
	g.PATCH("/me", s.updateMe)
}

// updateMe lets users change what is theirs to change: today their e-mail
// address. Privileges, names and passwords go through the users API.
func (s *Server) updateMe(c *gin.Context) {
	if !requireFullSession(c, "change your account") {
		return
	}
	var req struct {
		Email *string `json:"email"`
	}
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	u, err := s.users().Update(c.Request.Context(), principal(c).User.ID, users.Spec{Email: req.Email})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"user": u})
}

// issueToken issues a bearer token for the caller. A token issued through
// a token is its child (auth.IssueTokenFor): a guest session issues only
// guest tokens, none outliving it, so a guest can never escalate.
func (s *Server) issueToken(c *gin.Context) {
	var req tokenRequest
	if c.Request.ContentLength != 0 {
		if err := decodeJSON(c, &req); err != nil {
			fail(c, err)
			return
		}
	}
	ttl := s.deps.TokenTTL
	if req.TTLSeconds < 0 {
		fail(c, apperr.New(apperr.InvalidArgument, "ttl_seconds must be positive"))
		return
	}
	if req.TTLSeconds > int64(s.deps.MaxTokenTTL/time.Second) {
		// Compared before multiplying: a huge value would overflow into a
		// negative duration and issue an already-expired token.
		fail(c, apperr.New(apperr.InvalidArgument, "ttl_seconds must be at most %d", int64(s.deps.MaxTokenTTL/time.Second)))
		return
	}
	if req.TTLSeconds > 0 {
		ttl = time.Duration(req.TTLSeconds) * time.Second
	}
	if ttl > s.deps.MaxTokenTTL {
		fail(c, apperr.New(apperr.InvalidArgument, "ttl_seconds must be at most %d", int64(s.deps.MaxTokenTTL/time.Second)))
		return
	}
	if len(req.Name) > 128 {
		fail(c, apperr.New(apperr.InvalidArgument, "name must be at most 128 characters"))
		return
	}
	p := principal(c)
	secret, tok, err := s.deps.Auth.IssueTokenFor(c.Request.Context(), p, req.Name, ttl, req.Guest)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, tokenResponse{Token: secret, Info: tok})
}

func (s *Server) listTokens(c *gin.Context) {
	pr, err := ParsePage(c)
	if err != nil {
		fail(c, err)
		return
	}
	toks, err := s.deps.Auth.ListTokens(c.Request.Context(), principal(c), pr.Offset, pr.Limit+1)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, NewPage(pr, toks))
}

func (s *Server) revokeToken(c *gin.Context) {
	if err := s.deps.Auth.RevokeToken(c.Request.Context(), principal(c), c.Param("id")); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// createAppPassword creates an app password for the caller (signed in
// with the account password or a full token): the secret is in this
// response only.
func (s *Server) createAppPassword(c *gin.Context) {
	var req auth.AppPasswordSpec
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	secret, ap, err := s.deps.Auth.CreateAppPassword(c.Request.Context(), p, req)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"username": p.User.Username, "password": secret, "app_password": ap})
}

// listAppPasswords lists the caller's app passwords with their last use
// (never a secret or a hash).
func (s *Server) listAppPasswords(c *gin.Context) {
	p := principal(c)
	if err := auth.RequireFullSession(p, "list app passwords"); err != nil {
		fail(c, err)
		return
	}
	list, err := s.deps.Auth.ListAppPasswords(c.Request.Context(), p.User.ID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"items": list})
}

func (s *Server) revokeAppPassword(c *gin.Context) {
	if err := s.deps.Auth.RevokeAppPassword(c.Request.Context(), principal(c), c.Param("id")); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
