// Package console is Ontoflow's web console under /ui/: sign in with a
// service user, run action types through forms rendered from their
// form_schema, read the action log and the notifications inbox, and edit
// properties inline. Pages are html/template with htmx fragments; every
// asset is embedded, so the binary serves the whole console.
//
// The console is a client of the same services as the API: executions
// (validate, submit, wait, list, inline edit), the ontology store and the
// auth service. The engine is the single evaluator of form conditions:
// each keystroke posts the form to a fragment that calls the executions
// service's Validate and renders what it resolved.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/auth/oidc"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/insights"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications"
	"github.com/ontoflow/ontoflow/ontology"
)

// Prefix is where the console is served.
const Prefix = "/ui"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// PreviewFunc runs a what-if of r: what the action would change, without
// changing anything. Nil: no Preview button.
type PreviewFunc func(ctx context.Context, r executions.Request) (*PreviewResult, error)

// UndoFunc reverts execution id as p with a justification (the revert
// route's service call), returning the revert's execution. Nil: no Undo
// button.
type UndoFunc func(ctx context.Context, p *auth.Principal, id, justification string) (*models.Execution, error)

// PreviewResult is what a what-if shows: each touched object before and
// after, and the notifications and webhooks that would happen.
type PreviewResult struct {
	Objects       []PreviewObject
	Notifications []string
	Webhooks      []string
}

// PreviewObject is one object a what-if would touch.
type PreviewObject struct {
	ObjectTypeID, ObjectID, Op string
	Title                      string // set by the console when the user may read the object
	Before, After              map[string]any
}

// Deps are what the console needs from the process.
type Deps struct {
	Auth       *auth.Service
	Store      *ontology.Store
	Executions *executions.Service
	// Inbox reads and marks the caller's in-app notifications.
	Inbox    *notifications.Inbox
	Insights *insights.Service
	Levels   auth.Levels
	// TokenTTL is the lifetime of a console session (its bearer token).
	TokenTTL time.Duration
	Logger   *slog.Logger
	Preview  PreviewFunc
	Undo     UndoFunc
	// Files is the WebDAV handler the file picker of media_reference
	// inputs reads and uploads through. Nil: no picker.
	Files Files
	// OIDC signs users in with the identity provider (nil: off).
	OIDC *oidc.Provider
	// NoPasswordLogin hides the password form (with OIDC only).
	NoPasswordLogin bool
	// MaxBodyBytes caps a form's body as the API caps a JSON body (413
	// beyond it; 0: defaults.MaxBodyBytes). File uploads are WebDAV's
	// and keep its own limit.
	MaxBodyBytes int64
}

// Console is the console's http.Handler.
type Console struct {
	d        Deps
	tpl      *template.Template
	router   *gin.Engine
	insights *insights.Service
}

// New builds the console.
func New(d Deps) (*Console, error) {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.TokenTTL == 0 {
		d.TokenTTL = 12 * time.Hour
	}
	if d.MaxBodyBytes <= 0 {
		d.MaxBodyBytes = defaults.MaxBodyBytes
	}
	tpl, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("parse console templates: %w", err)
	}
	c := &Console{d: d, tpl: tpl, insights: d.Insights}
	c.router = c.routes()
	return c, nil
}

// ServeHTTP serves /ui and everything under it.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.router.ServeHTTP(w, r) }

func (c *Console) routes() *gin.Engine {
	r := gin.New()
	r.ContextWithFallback = true
	r.Use(c.recoverer, securityHeaders, c.limitBody)
	static, _ := fs.Sub(staticFS, "static")
	r.GET(Prefix+"/static/*file", staticHandler(static))
	r.GET(Prefix, func(g *gin.Context) { g.Redirect(http.StatusSeeOther, Prefix+"/") })
	r.GET("/", func(g *gin.Context) { g.Redirect(http.StatusSeeOther, Prefix+"/") })
	r.GET(Prefix+"/login", c.loginPage)
	r.POST(Prefix+"/login", sameOrigin, c.login)
	if c.d.OIDC != nil {
		r.GET(Prefix+"/auth/login", c.oidcLogin)
		r.GET(Prefix+"/auth/callback", c.oidcCallback)
	}
	g := r.Group(Prefix, c.session, c.csrf)
	g.POST("/logout", c.logout)
	g.GET("/account", c.accountPage)
	g.POST("/account/app-passwords", c.createAppPassword)
	g.POST("/account/app-passwords/:id/revoke", c.revokeAppPassword)
	g.GET("/", c.actionsPage)
	g.GET("/actions/:id", c.actionPage)
	g.GET("/actions/:id/targets", c.targetOptions)
	g.POST("/actions/:id/form", c.formFragment)
	g.POST("/actions/:id/run", c.run)
	g.POST("/actions/:id/preview", c.preview)
	g.POST("/executions/:id/undo", c.undo)
	g.GET("/executions/:id", c.executionPage)
	g.GET("/log", c.logPage)
	g.GET("/insights", c.insightsPage)
	g.GET("/notifications", c.notificationsPage)
	g.POST("/notifications/:id/read", c.markRead)
	g.GET("/explore", c.explorePage)
	g.GET("/explore/:type", c.objectsTable)
	g.GET("/explore/:type/facets", c.facetsPage)
	g.GET("/objects/search", c.referenceOptions)
	g.GET("/files", c.filesFragment)
	g.POST("/files/upload", c.uploadFile)
	g.GET("/files/raw", c.rawFile)
	g.GET("/objects/:type/:id", c.objectPage)
	g.POST("/objects/:type/:id/properties/:prop", c.inlineEdit)
	r.NoRoute(func(g *gin.Context) { c.errorPage(g, http.StatusNotFound, "No such page.") })
	return r
}

// csp forbids inline scripts and styles, framing, and every origin but
// this one: htmx is loaded from /ui/static and configured by a meta tag.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func securityHeaders(g *gin.Context) {
	h := g.Writer.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	g.Next()
}

func staticHandler(static fs.FS) gin.HandlerFunc {
	files := http.FileServer(http.FS(static))
	return func(g *gin.Context) {
		// Assets change only with the binary.
		g.Header("Cache-Control", "public, max-age=3600")
		g.Request.URL.Path = g.Param("file")
		files.ServeHTTP(g.Writer, g.Request)
	}
}

func (c *Console) recoverer(g *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			c.d.Logger.ErrorContext(g.Request.Context(), "panic in console handler", "path", g.Request.URL.Path, "panic", fmt.Sprint(v))
			c.errorPage(g, http.StatusInternalServerError, "Internal error; see the server log.")
		}
	}()
	g.Next()
}

// limitBody refuses a form body over Deps.MaxBodyBytes with the API's 413
// (apperr.RequestTooLarge): before reading when Content-Length says so,
// else when the form is parsed (readForm). The file picker's upload
// streams to WebDAV, which applies its own upload limit.
func (c *Console) limitBody(g *gin.Context) {
	r := g.Request
	if r.Body == nil || r.Method == http.MethodGet || r.URL.Path == Prefix+"/files/upload" {
		g.Next()
		return
	}
	if r.ContentLength > c.d.MaxBodyBytes {
		c.tooLarge(g)
		g.Abort()
		return
	}
	r.Body = http.MaxBytesReader(g.Writer, r.Body, c.d.MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			c.tooLarge(g)
			g.Abort()
			return
		}
	}
	g.Next()
}

func (c *Console) tooLarge(g *gin.Context) {
	c.fail(g, apperr.New(apperr.RequestTooLarge, "request body exceeds %d bytes", c.d.MaxBodyBytes))
}
