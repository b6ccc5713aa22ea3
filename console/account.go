package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/models"
)

// accountView is the account page: the caller's app passwords and, right
// after one was created, its secret (shown this once).
type accountView struct {
	Username     string
	CSRF         string
	AppPasswords []models.AppPassword
	Created      string // the new app password's secret
	CreatedName  string
	Error        string
	Now          time.Time
}

// maxAppPasswordDays bounds the expiry the form offers to type.
const maxAppPasswordDays = 3650

func (c *Console) accountPage(g *gin.Context) {
	c.renderAccount(g, http.StatusOK, accountView{})
}

func (c *Console) renderAccount(g *gin.Context, status int, v accountView) {
	p := principal(g)
	list, err := c.d.Auth.ListAppPasswords(g.Request.Context(), p.User.ID)
	if err != nil {
		c.fail(g, err)
		return
	}
	v.Username, v.CSRF, v.AppPasswords, v.Now = p.User.Username, g.GetString(csrfKey), list, time.Now()
	c.page(g, status, "account", "Account", v)
}

// createAppPassword creates an app password from the account page's form
// (name, scope, optional expiry in days) and shows its secret once; the
// page is no-store, as every session page is.
func (c *Console) createAppPassword(g *gin.Context) {
	sp := auth.AppPasswordSpec{Name: g.PostForm("name"), Scope: g.PostForm("scope")}
	if d := strings.TrimSpace(g.PostForm("days")); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 || n > maxAppPasswordDays {
			c.renderAccount(g, http.StatusBadRequest, accountView{Error: "Expiry must be a whole number of days from 1 to 3650, or empty for none."})
			return
		}
		exp := time.Now().Add(time.Duration(n) * 24 * time.Hour)
		sp.ExpiresAt = &exp
	}
	secret, ap, err := c.d.Auth.CreateAppPassword(g.Request.Context(), principal(g), sp)
	if err != nil {
		if ae, ok := apperr.As(err); ok && ae.Code != apperr.Internal {
			c.renderAccount(g, ae.Code.Status(), accountView{Error: ae.Message})
			return
		}
		c.fail(g, err)
		return
	}
	c.renderAccount(g, http.StatusCreated, accountView{Created: secret, CreatedName: ap.Name})
}

func (c *Console) revokeAppPassword(g *gin.Context) {
	if err := c.d.Auth.RevokeAppPassword(g.Request.Context(), principal(g), g.Param("id")); err != nil {
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, Prefix+"/account")
}
