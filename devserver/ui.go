package devserver

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"

	uiapi "github.com/temporalio/ui-server/v2/server/api"
	uiauth "github.com/temporalio/ui-server/v2/server/auth"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uicors "github.com/temporalio/ui-server/v2/server/cors"
	uicsrf "github.com/temporalio/ui-server/v2/server/csrf"
	uiheaders "github.com/temporalio/ui-server/v2/server/headers"
	uiroute "github.com/temporalio/ui-server/v2/server/route"
	uiassets "github.com/temporalio/ui-server/v2/ui"
)

// uiServer is the Temporal Web UI (github.com/temporalio/ui-server/v2) served
// in-process on its own listener.
//
// The handler is assembled from ui-server's exported route, middleware and
// api packages in the same order as its server.NewServer (v2.55.0). We do not
// use server.NewServer/Start directly because Start binds its own listener
// and calls os.Exit (echo Logger.Fatal) on any listen error, and the gRPC
// connection it opens to the frontend can never be closed.
type uiServer struct {
	http *http.Server
	conn *grpc.ClientConn
	done chan struct{}
}

func uiConfig(frontendAddr, ns string, ln net.Listener) *uiconfig.Config {
	addr := ln.Addr().(*net.TCPAddr)
	return &uiconfig.Config{
		TemporalGRPCAddress: frontendAddr,
		Host:                addr.IP.String(),
		Port:                addr.Port,
		EnableUI:            true,
		DefaultNamespace:    ns,
		// No outbound calls: no news fetch, no new-version notification
		// (which queries GitHub / Docker Hub), no feedback link.
		DisableNewsFetch:   true,
		NotifyOnNewVersion: false,
		FeedbackURL:        "",
		HideLogs:           true,
		// Plain HTTP on localhost: the CSRF cookie must not be Secure.
		CORS: uiconfig.CORS{CookieInsecure: true},
		// RefreshInterval 0: no config reload goroutine.
	}
}

func startUI(ln net.Listener, frontendAddr, ns string, logger *slog.Logger) (*uiServer, error) {
	cfg := uiConfig(frontendAddr, ns, ln)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfgProvider, err := uiconfig.NewConfigProviderWithRefresh(cfg)
	if err != nil {
		return nil, err
	}
	apiMiddleware := []uiapi.Middleware{
		uiheaders.WithForwardHeaders([]string{uiauth.AuthorizationExtrasHeader, "Caller-Type"}),
	}

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.Logger.SetOutput(&lineLogger{l: logger.With("component", "temporal-ui"), level: slog.LevelWarn})

	e.Use(middleware.Recover())
	e.Use(middleware.Gzip())
	e.Use(uicors.CORSMiddleware(uicors.CORSConfig{
		AllowHeaders: []string{
			echo.HeaderOrigin, echo.HeaderContentType, echo.HeaderAccept,
			echo.HeaderXCSRFToken, echo.HeaderAuthorization, uiauth.AuthorizationExtrasHeader,
			"Caller-Type",
		},
		AllowCredentials: true,
		ConfigProvider:   cfgProvider,
	}))
	e.Use(middleware.Secure())
	cookieSecure := !cfg.CORS.CookieInsecure
	e.Use(uicsrf.EnsureTokenCookie(cookieSecure))
	e.Use(middleware.CSRFWithConfig(uicsrf.MiddlewareConfig(cfgProvider, cookieSecure)))
	e.Pre(uiroute.PublicPath(cfg.PublicPath))
	uiroute.SetHealthRoute(e)

	// API routes (as uiroute.SetAPIRoutes, but owning the connection).
	conn, err := uiapi.CreateGRPCConnection(cfgProvider)
	if err != nil {
		return nil, err
	}
	api := e.Group("/api/v1")
	api.GET("/settings", uiapi.GetSettings(cfgProvider))
	api.GET("/releases", uiapi.GetLatestReleases(cfgProvider, uiapi.NewReleaseChecker()))
	api.GET("/ui-extensions", uiapi.GetUIExtensions(cfgProvider, uiapi.TemporalAccessCheck(conn, apiMiddleware)))
	writeControl := uiroute.DisableWriteMiddleware(cfgProvider)
	api.GET(uiapi.WorkflowRawHistoryUrl, uiapi.WorkflowRawHistoryHandler(workflowservice.NewWorkflowServiceClient(conn)), writeControl)
	api.Match([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, "/*", uiapi.TemporalAPIHandler(cfgProvider, apiMiddleware, conn), writeControl)

	uiroute.SetAuthRoutes(e, cfgProvider) // no-op: auth is disabled

	assets, err := uiassets.Assets()
	if err == nil {
		assets, err = fs.Sub(assets, "local")
	}
	if err == nil {
		err = uiroute.SetUIRoutes(e, cfg.PublicPath, assets, cfgProvider)
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	uiroute.SetRenderRoute(e, "/")

	s := &uiServer{
		http: &http.Server{
			Handler:           e,
			ReadHeaderTimeout: 30 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.With("component", "temporal-ui").Handler(), slog.LevelWarn),
		},
		conn: conn,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("temporal UI server stopped", "component", "temporal-ui", "error", err)
		}
	}()
	return s, nil
}

func (s *uiServer) stop(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		_ = s.http.Close()
	}
	<-s.done
	return errors.Join(err, s.conn.Close())
}

// lineLogger turns echo's logger output (one JSON object per line) into slog
// records at a fixed level.
type lineLogger struct {
	mu    sync.Mutex
	l     *slog.Logger
	level slog.Level
	buf   bytes.Buffer
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			// Incomplete line: keep it for the next write.
			w.buf.Reset()
			w.buf.WriteString(line)
			return len(p), nil
		}
		if msg := strings.TrimSpace(line); msg != "" {
			w.l.Log(context.Background(), w.level, msg)
		}
	}
}
