package console

import (
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/auth/oidc"
)

// pendingCookie holds a sign-in in progress with the identity provider
// (state, nonce, PKCE verifier, return path) from the redirect to the
// callback. SameSite=Lax, not Strict: the callback is a top-level
// navigation from the provider's site, on which a Strict cookie is not
// sent. It is used once: the callback clears it, so a replayed callback
// URL finds no pending sign-in.
const pendingCookie = "ontoflow_oidc"

// pendingMaxAge bounds how long a sign-in at the provider may take.
const pendingMaxAge = 600

func (c *Console) setPending(g *gin.Context, value string, maxAge int) {
	http.SetCookie(g.Writer, &http.Cookie{Name: pendingCookie, Value: value, Path: Prefix + "/auth", MaxAge: maxAge,
		HttpOnly: true, Secure: g.Request.TLS != nil || g.GetHeader("X-Forwarded-Proto") == "https",
		SameSite: http.SameSiteLaxMode})
}

// oidcLogin starts a sign-in with the identity provider: it keeps the
// pending state in its cookie and redirects to the provider.
func (c *Console) oidcLogin(g *gin.Context) {
	pd, u := c.d.OIDC.Start(g.Query("return"))
	b, err := json.Marshal(pd)
	if err != nil {
		c.fail(g, err)
		return
	}
	c.setPending(g, base64.RawURLEncoding.EncodeToString(b), pendingMaxAge)
	g.Header("Cache-Control", "no-store")
	g.Redirect(http.StatusFound, u)
}

// oidcCallback finishes the sign-in: the provider's answer is checked
// against the pending state (oidc.Provider.Finish), the user provisioned
// from the claims, and a console session issued as a password sign-in
// issues one.
func (c *Console) oidcCallback(g *gin.Context) {
	ctx := g.Request.Context()
	var pd oidc.Pending
	if ck, err := g.Request.Cookie(pendingCookie); err == nil {
		if b, err := base64.RawURLEncoding.DecodeString(ck.Value); err == nil {
			_ = json.Unmarshal(b, &pd) // a malformed cookie leaves no state: refused below
		}
	}
	c.setPending(g, "", -1)
	if e := g.Query("error"); e != "" {
		c.d.Logger.InfoContext(ctx, "oidc sign-in refused by the provider", "error", e, "description", g.Query("error_description"))
		c.loginError(g, http.StatusUnauthorized, "The identity provider did not sign you in.")
		return
	}
	id, err := c.d.OIDC.Finish(ctx, pd, g.Query("state"), g.Query("code"))
	if err != nil {
		c.d.Logger.WarnContext(ctx, "oidc sign-in", "err", err, "remote", remoteIP(g.Request))
		c.loginError(g, http.StatusUnauthorized, "Sign-in with the identity provider failed; try again.")
		return
	}
	u, err := c.d.OIDC.Provision(ctx, id)
	if err != nil {
		if ae, ok := apperr.As(err); ok && ae.Code != apperr.Internal {
			c.d.Logger.InfoContext(ctx, "oidc sign-in refused", "sub", id.Subject, "err", err)
			c.loginError(g, ae.Code.Status(), ae.Message)
			return
		}
		c.d.Logger.ErrorContext(ctx, "oidc provisioning", "err", err)
		c.loginError(g, http.StatusInternalServerError, "Sign-in failed; see the server log.")
		return
	}
	secret, tok, err := c.d.Auth.IssueTokenFor(ctx, &auth.Principal{User: u, Method: "oidc"}, "console (oidc)", c.d.TokenTTL, false)
	if err == nil {
		// Kept before the cookie is set: a session the provider's could
		// not end must not begin.
		err = c.d.OIDC.KeepSession(ctx, tok.ID, u.ID, id)
	}
	if err != nil {
		c.d.Logger.ErrorContext(ctx, "console token", "err", err)
		c.loginError(g, http.StatusInternalServerError, "Sign-in failed; see the server log.")
		return
	}
	c.setCookie(g, secret, int(c.d.TokenTTL.Seconds()))
	// A page that moves on, not a redirect: the browser arrived from the
	// provider's site, and a redirect chain that began cross-site would
	// not carry the SameSite=Strict session cookie.
	g.Header("Cache-Control", "no-store")
	c.render(g, http.StatusOK, "signed-in", signedIn{To: template.URL(oidc.LocalPath(pd.Return))})
}

type signedIn struct{ To template.URL }

func (c *Console) loginError(g *gin.Context, status int, msg string) {
	c.render(g, status, "login", c.loginData(pageData{Title: "Sign in", Error: msg}))
}

// loginData adds the provider's button and the password form's presence
// to the sign-in page's data.
func (c *Console) loginData(pd pageData) pageData {
	lp := loginPage{Password: true}
	if c.d.OIDC != nil {
		lp.Provider = c.d.OIDC.Label()
		lp.Password = !c.d.NoPasswordLogin
	}
	pd.Content = lp
	return pd
}

type loginPage struct {
	Provider string // "" = no provider
	Password bool
}
