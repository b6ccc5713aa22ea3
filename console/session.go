package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
)

// cookieName holds the session's bearer token. The cookie is the token
// itself (HttpOnly, SameSite=Strict, Secure over TLS): signing out revokes
// it, and a password change kills it like every token.
const cookieName = "ontoflow_session"

const (
	principalKey = "console.principal"
	csrfKey      = "console.csrf"
)

// csrfToken is the session's CSRF token: a hash of its secret under a
// label of its own, so it is the same on every replica without stored
// state, and page scripts (which may read it) learn nothing that
// authenticates.
func csrfToken(secret string) string {
	sum := sha256.Sum256([]byte("ontoflow-console-csrf\x00" + secret))
	return hex.EncodeToString(sum[:])
}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// session admits requests with a live session cookie; others are sent to
// the sign-in page (htmx requests by HX-Redirect, which htmx follows).
func (c *Console) session(g *gin.Context) {
	ck, err := g.Request.Cookie(cookieName)
	if err == nil && ck.Value != "" {
		p, err := c.d.Auth.Bearer(g.Request.Context(), ck.Value, remoteIP(g.Request))
		if err == nil && c.idpEnded(g, p) {
			err = auth.ErrUnauthorized
		}
		if err == nil {
			g.Set(principalKey, p)
			g.Set(csrfKey, csrfToken(ck.Value))
			g.Header("Cache-Control", "no-store")
			g.Next()
			return
		}
		if !apperr.Is(err, apperr.Unauthorized) {
			c.d.Logger.WarnContext(g.Request.Context(), "console session", "err", err)
		}
	}
	if g.GetHeader("HX-Request") == "true" {
		g.Header("HX-Redirect", Prefix+"/login")
		g.Status(http.StatusUnauthorized)
		g.Abort()
		return
	}
	g.Redirect(http.StatusSeeOther, Prefix+"/login")
	g.Abort()
}

// idpEnded checks a session that began at the identity provider with it
// when its ID token has expired (oidc.Provider.CheckSession): ended, the
// session's token is revoked and the cookie cleared. A check that fails
// for want of the provider keeps the session.
func (c *Console) idpEnded(g *gin.Context, p *auth.Principal) bool {
	if c.d.OIDC == nil || p.User.OIDCSubject == nil || p.TokenID == "" {
		return false
	}
	ended, err := c.d.OIDC.CheckSession(g.Request.Context(), p.TokenID, p.User.ID)
	if err != nil {
		c.d.Logger.WarnContext(g.Request.Context(), "console session: check with the identity provider", "err", err)
	}
	if ended {
		c.setCookie(g, "", -1)
	}
	return ended
}

// csrf refuses a state-changing request that does not come from a console
// page: its Origin must be this host and it must carry the session's CSRF
// token (form field csrf or header X-CSRF-Token). SameSite=Strict already
// keeps the cookie off cross-site requests; this holds without it.
func (c *Console) csrf(g *gin.Context) {
	if g.Request.Method == http.MethodGet || g.Request.Method == http.MethodHead {
		g.Next()
		return
	}
	if !originOK(g.Request) {
		c.errorPage(g, http.StatusForbidden, "Cross-origin request refused.")
		g.Abort()
		return
	}
	sent := g.GetHeader("X-CSRF-Token")
	if sent == "" {
		sent = g.PostForm("csrf")
	}
	want := g.GetString(csrfKey)
	if want == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(want)) != 1 {
		c.errorPage(g, http.StatusForbidden, "Missing or stale form token; reload the page.")
		g.Abort()
		return
	}
	g.Next()
}

// originOK accepts a request whose Origin (or, lacking one, Referer) names
// this host. Browsers send Origin on every POST; a request with neither
// header is no browser's cross-site request.
func originOK(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		o = r.Header.Get("Referer")
	}
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

func sameOrigin(g *gin.Context) {
	if !originOK(g.Request) {
		g.String(http.StatusForbidden, "cross-origin request refused")
		g.Abort()
		return
	}
	g.Next()
}

func principal(g *gin.Context) *auth.Principal {
	v, _ := g.Get(principalKey)
	p, _ := v.(*auth.Principal)
	return p
}

func (c *Console) setCookie(g *gin.Context, value string, maxAge int) {
	http.SetCookie(g.Writer, &http.Cookie{Name: cookieName, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: g.Request.TLS != nil || g.GetHeader("X-Forwarded-Proto") == "https",
		SameSite: http.SameSiteStrictMode})
}

func (c *Console) loginPage(g *gin.Context) {
	c.render(g, http.StatusOK, "login", c.loginData(pageData{Title: "Sign in"}))
}

// login verifies the service user's password with the auth service and
// issues a token for the session, as POST /api/v1/auth/tokens would.
func (c *Console) login(g *gin.Context) {
	ctx := g.Request.Context()
	if c.d.OIDC != nil && c.d.NoPasswordLogin {
		c.loginError(g, http.StatusForbidden, "Sign in with the identity provider.")
		return
	}
	user := g.PostForm("username")
	p, err := c.d.Auth.Basic(ctx, user, g.PostForm("password"), remoteIP(g.Request))
	if err != nil {
		msg := "Wrong username or password."
		status := http.StatusUnauthorized
		if _, ok := auth.AsThrottled(err); ok {
			msg, status = "Too many failed attempts; wait a moment and try again.", http.StatusTooManyRequests
		} else if !apperr.Is(err, apperr.Unauthorized) {
			c.d.Logger.ErrorContext(ctx, "console sign-in", "err", err)
			msg, status = "Sign-in failed; see the server log.", http.StatusInternalServerError
		}
		c.render(g, status, "login", c.loginData(pageData{Title: "Sign in", Error: msg, Username: user}))
		return
	}
	secret, _, err := c.d.Auth.IssueTokenFor(ctx, p, "console", c.d.TokenTTL, false)
	if err != nil {
		c.d.Logger.ErrorContext(ctx, "console token", "err", err)
		c.loginError(g, http.StatusInternalServerError, "Sign-in failed; see the server log.")
		return
	}
	c.setCookie(g, secret, int(c.d.TokenTTL.Seconds()))
	g.Redirect(http.StatusSeeOther, Prefix+"/")
}

// logout revokes the session's token, so a copy of the cookie is dead too.
func (c *Console) logout(g *gin.Context) {
	p := principal(g)
	if err := c.d.Auth.RevokeToken(g.Request.Context(), p, p.TokenID); err != nil {
		c.d.Logger.WarnContext(g.Request.Context(), "console sign-out", "err", err)
	}
	c.setCookie(g, "", -1)
	if c.d.OIDC != nil && p.User.OIDCSubject != nil {
		// RP-initiated logout: the provider ends its own session too, so
		// the next "Sign in with" asks for credentials again.
		if u := c.d.OIDC.LogoutURL(); u != "" {
			g.Redirect(http.StatusSeeOther, u)
			return
		}
	}
	g.Redirect(http.StatusSeeOther, Prefix+"/login")
}
