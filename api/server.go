// Package api is Ontoflow's HTTP interface: a gin router for /api/v1, the
// health endpoints and metrics, composed with the WebDAV handler into the one
// http.Handler the API process serves.
//
// Conventions every route follows:
//   - JSON in and out; bodies are decoded strictly (decodeJSON) and capped
//     (Deps.MaxBodyBytes, 413 beyond it);
//   - one error shape, {"error":{"code","message","details"}}, rendered by
//     fail from an *apperr.Error whose code fixes the status;
//   - authentication by HTTP Basic or a bearer token (auth.Service), the
//     caller available through principal(c);
//   - lists answer {"data":[...],"next_page_token":"..."} (see page.go).
package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/channelspec"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/users"
)

// Deps are what the API needs from the process that serves it.
type Deps struct {
	// Users is the user store behind /users and /me.
	Users  *users.Store
	Auth   *auth.Service
	Levels auth.Levels
	Logger *slog.Logger
	// MaxBodyBytes caps JSON request bodies (0 = DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// WebDAV serves /webdav and the root probes of WebDAV clients; nil
	// leaves them to the router (404).
	WebDAV http.Handler
	// Ready checks dependencies for /readyz (database, Temporal, the
	// WebDAV store).
	Ready func(ctx context.Context) error
	// Registry receives the API's metrics and is served at /metrics.
	Registry *prometheus.Registry
	// Routes registers further route groups (the ontology and action
	// engine) on /api/v1 behind authentication.
	Routes []func(g *gin.RouterGroup)
	// TokenTTL is the default lifetime of issued tokens (0 = 24h) and
	// MaxTokenTTL the longest a caller may ask for (0 = 30 days).
	TokenTTL, MaxTokenTTL time.Duration
	// UIURL is the Temporal Web UI's base URL, for workflow links.
	UIURL string
	// Console serves the web console under /ui (nil: none); GET / then
	// redirects to it.
	Console http.Handler
	// Channels are the notification channels the OpenAPI document lists
	// (nil: the built-in ones).
	Channels *channelspec.Registry
}

// Server is the HTTP API.
type Server struct {
	deps    Deps
	router  *gin.Engine
	metrics *httpMetrics
}

func init() { gin.SetMode(gin.ReleaseMode) }

// Defaults of Deps, and of the flags that set them (config uses these
// constants: one source).
const (
	DefaultMaxBodyBytes = defaults.MaxBodyBytes
	DefaultTokenTTL     = defaults.TokenTTL
	DefaultMaxTokenTTL  = defaults.MaxTokenTTL
)

// New builds the router.
func New(deps Deps) *Server {
	if deps.MaxBodyBytes == 0 {
		deps.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	if deps.TokenTTL == 0 {
		deps.TokenTTL = DefaultTokenTTL
	}
	if deps.MaxTokenTTL == 0 {
		deps.MaxTokenTTL = DefaultMaxTokenTTL
	}
	s := &Server{deps: deps, metrics: newHTTPMetrics(deps.Registry)}
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.ContextWithFallback = true
	r.Use(securityHeaders, s.recoverer, s.accessLog, s.limitBody)
	r.NoRoute(func(c *gin.Context) {
		fail(c, apperr.New(apperr.NotFound, "no route for %s %s", c.Request.Method, c.Request.URL.Path))
	})
	r.NoMethod(func(c *gin.Context) {
		c.Header("Allow", allowHeader(r, c.Request.URL.Path))
		c.AbortWithStatusJSON(http.StatusMethodNotAllowed, errorBody{Error: apperr.New("MethodNotAllowed",
			"method %s is not allowed on %s", c.Request.Method, c.Request.URL.Path)})
	})
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", s.readyz)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(deps.Registry, promhttp.HandlerOpts{})))
	doc := OpenAPIFor(deps.Channels)
	r.GET("/openapi.yaml", serveOpenAPI(doc))
	r.GET("/api/v1/openapi.yaml", serveOpenAPI(doc))

	v1 := r.Group("/api/v1", noStore, s.authenticate, saneInput)
	s.registerAuthRoutes(v1)
	s.registerUserRoutes(v1)
	for _, reg := range deps.Routes {
		reg(v1)
	}
	s.router = r
	return s
}

// Router exposes the gin engine (tests compare it with the OpenAPI document).
func (s *Server) Router() *gin.Engine { return s.router }

// Handler is the process's whole HTTP surface: WebDAV for /webdav and for
// the OPTIONS/PROPFIND probes Windows and macOS send to "/", the API for the
// rest.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.deps.WebDAV != nil && isWebDAV(r) {
			s.deps.WebDAV.ServeHTTP(w, r)
			return
		}
		if s.deps.Console != nil && isConsole(r) {
			s.deps.Console.ServeHTTP(w, r)
			return
		}
		s.router.ServeHTTP(w, r)
	})
}

// isConsole routes /ui and below to the console, and a browser's GET of
// "/" to it as well (the console redirects it).
func isConsole(r *http.Request) bool {
	p := r.URL.Path
	return p == "/ui" || strings.HasPrefix(p, "/ui/") || (p == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead))
}

func isWebDAV(r *http.Request) bool {
	p := r.URL.Path
	if p == "/webdav" || strings.HasPrefix(p, "/webdav/") {
		return true
	}
	return p == "/" && (r.Method == http.MethodOptions || r.Method == "PROPFIND")
}

func (s *Server) readyz(c *gin.Context) {
	if s.deps.Ready == nil {
		c.JSON(http.StatusOK, gin.H{"status": "ready"})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 5*time.Second)
	defer cancel()
	if err := s.deps.Ready(ctx); err != nil {
		s.deps.Logger.Warn("not ready", "err", err)
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, errorBody{Error: apperr.New(apperr.Unavailable, "not ready (database, Temporal or the WebDAV store unreachable; see the server log)")})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}

func allowHeader(r *gin.Engine, path string) string {
	var methods []string
	for _, rt := range r.Routes() {
		if routeMatches(rt.Path, path) {
			methods = append(methods, rt.Method)
		}
	}
	return strings.Join(methods, ", ")
}

// routeMatches compares a gin pattern (":param", "*rest") with a path.
func routeMatches(pattern, path string) bool {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range ps {
		if strings.HasPrefix(p, "*") {
			return true
		}
		if i >= len(xs) || (!strings.HasPrefix(p, ":") && p != xs[i]) {
			return false
		}
	}
	return len(ps) == len(xs)
}
