package api

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/printable"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/telemetry"
)

const principalKey = "ontoflow.principal"

// authenticate admits callers with valid Basic credentials or a bearer
// token; everyone else gets 401 with WWW-Authenticate and the JSON body,
// or 429 TooManyRequests with Retry-After while their username or address
// is over the failure limit.
func (s *Server) authenticate(c *gin.Context) {
	p, err := s.deps.Auth.Authenticate(c.Request)
	if err != nil {
		if te, ok := auth.AsThrottled(err); ok {
			c.Header("Retry-After", strconv.Itoa(te.RetryAfterSeconds()))
			fail(c, err)
			return
		}
		if !apperr.Is(err, apperr.Unauthorized) {
			fail(c, fmt.Errorf("authenticate: %w", err))
			return
		}
		fail(c, err)
		return
	}
	c.Set(principalKey, p)
	c.Next()
}

// principal is the authenticated caller of a route behind authenticate.
func principal(c *gin.Context) *auth.Principal {
	p, _ := c.Get(principalKey)
	pr, _ := p.(*auth.Principal)
	return pr
}

// Principal is principal for route groups registered from other packages.
func Principal(c *gin.Context) *auth.Principal { return principal(c) }

// requirePermission answers 403 unless the caller holds key.
func requirePermission(c *gin.Context, key string) bool {
	p := principal(c)
	if p == nil || !auth.HasPermission(p.User, key) {
		fail(c, apperr.New(apperr.PermissionDenied, "permission %q is required", key).
			WithDetails(apperr.Detail{Reason: "missing_permission", Field: key, Message: "missing permission " + key}))
		return false
	}
	return true
}

// requireFullSession answers 403 to a guest session (auth.RequireFullSession):
// routes that create or change credentials or privileges call it.
func requireFullSession(c *gin.Context, what string) bool {
	if err := auth.RequireFullSession(principal(c), what); err != nil {
		fail(c, err)
		return false
	}
	return true
}

// RequirePermission is requirePermission for other packages' routes.
func RequirePermission(c *gin.Context, key string) bool { return requirePermission(c, key) }

// saneInput refuses path parameters and query values that are not UTF-8
// text (invalid bytes, NUL, other control characters): nothing the API
// names looks like that, and Postgres would answer them with an error
// that surfaced as a 500.
func saneInput(c *gin.Context) {
	for _, p := range c.Params {
		if !printable.String(p.Value) {
			fail(c, apperr.New(apperr.InvalidArgument, "path parameter %s must be UTF-8 text without control characters", p.Key))
			return
		}
	}
	for k, vs := range c.Request.URL.Query() {
		for _, v := range vs {
			if !printable.String(k) || !printable.String(v) {
				fail(c, apperr.New(apperr.InvalidArgument, "query parameter %q must be UTF-8 text without control characters", strings.ToValidUTF8(k, "?")))
				return
			}
		}
	}
	c.Next()
}

// securityHeaders marks every response of the router nosniff: a body is
// never to be read as anything but its declared type (a JSON error echoing
// user input must not be sniffed into HTML or script).
func securityHeaders(c *gin.Context) {
	c.Header("X-Content-Type-Options", "nosniff")
	c.Next()
}

// noStore keeps /api/v1 answers out of every cache: they carry account
// data, execution parameters and, from POST /auth/tokens, a bearer
// token's secret, none of which a browser or proxy may keep on disk.
func noStore(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.Next()
}

func (s *Server) limitBody(c *gin.Context) {
	if c.Request.Body != nil && c.Request.ContentLength > s.deps.MaxBodyBytes {
		fail(c, apperr.New(apperr.RequestTooLarge, "request body exceeds %d bytes", s.deps.MaxBodyBytes))
		return
	}
	if c.Request.Body != nil {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, s.deps.MaxBodyBytes)
	}
	c.Next()
}

func (s *Server) recoverer(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.deps.Logger.Error("panic in handler", "method", c.Request.Method, "path", c.Request.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			fail(c, apperr.New(apperr.Internal, "internal error"))
		}
	}()
	c.Next()
}

func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	d := time.Since(start)
	status := c.Writer.Status()
	method, route := metricLabels(c)
	s.metrics.requests.WithLabelValues(method, route, statusClass(status)).Inc()
	s.metrics.duration.WithLabelValues(method, route).Observe(d.Seconds())
	user := ""
	if p := principal(c); p != nil {
		user = p.User.Username
	}
	s.deps.Logger.LogAttrs(loggedExecution(c), levelFor(status), "http",
		slogAttrs(c.Request.Method, c.Request.URL.Path, status, c.Writer.Size(), d, user)...)
}

// answeredExecutionKey is the gin context key under which a route that
// answers with an execution leaves it for the access line.
const answeredExecutionKey = "ontoflow.execution"

// answeredExecution marks the request as answering with ex: its access
// line then names the execution and its workflow (the trace id comes from
// the request's span), so the request leads to the execution's record,
// history and trace.
func answeredExecution(c *gin.Context, ex *models.Execution) {
	c.Set(answeredExecutionKey, ex)
}

// loggedExecution is the request's context, naming the execution it
// answered with, if any.
func loggedExecution(c *gin.Context) context.Context {
	ctx := c.Request.Context()
	if ex, ok := c.Value(answeredExecutionKey).(*models.Execution); ok && ex != nil {
		return telemetry.WithExecution(ctx, ex.ID, ex.WorkflowID)
	}
	return ctx
}

// metricLabels are a request's method and route as metric labels. Anyone
// can send a request, authenticated or not, so every label comes from a
// bounded set: a method the API serves or OTHER, the route's template
// (never the raw path) or "unmatched". The series are then at most
// methods x (routes + 1) x status classes, whatever clients send.
func metricLabels(c *gin.Context) (method, route string) {
	method = c.Request.Method
	if !apiMethods[method] {
		method = "OTHER"
	}
	route = c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	return method, route
}

var apiMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// statusClass is "2xx", "4xx"... ("other" outside 100-599).
func statusClass(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code/100) + "xx"
}

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ontoflow_api_requests_total", Help: "API requests by method (OTHER for methods the API does not serve), route template (unmatched for no route) and status class (2xx...).",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "ontoflow_api_request_duration_seconds", Help: "API request latency by method (OTHER for methods the API does not serve) and route template.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}
