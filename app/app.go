// Package app assembles Ontoflow's processes from their parts: the database,
// authentication, the Temporal client (and in dev mode the embedded Temporal
// server and UI), the action engine's worker, and the HTTP server for the
// API and WebDAV. Each subcommand of cmd/ontoflow is one Mode here.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/activities"
	"github.com/ontoflow/ontoflow/api"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/auth/oidc"
	"github.com/ontoflow/ontoflow/automations"
	"github.com/ontoflow/ontoflow/channelspec"
	"github.com/ontoflow/ontoflow/config"
	"github.com/ontoflow/ontoflow/console"
	"github.com/ontoflow/ontoflow/devserver"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/engine/kinds/invokefunction"
	"github.com/ontoflow/ontoflow/engine/kinds/invokewebhook"
	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/functions"
	"github.com/ontoflow/ontoflow/insights"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications"
	"github.com/ontoflow/ontoflow/notifications/channels"
	"github.com/ontoflow/ontoflow/notifications/senders"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/outbound"
	"github.com/ontoflow/ontoflow/revert"
	"github.com/ontoflow/ontoflow/secrets"
	"github.com/ontoflow/ontoflow/telemetry"
	"github.com/ontoflow/ontoflow/telemetry/storegauges"
	"github.com/ontoflow/ontoflow/users"
	"github.com/ontoflow/ontoflow/webdav"
	"github.com/ontoflow/ontoflow/webdav/contents"
	"github.com/ontoflow/ontoflow/whatif"
	"github.com/ontoflow/ontoflow/worker"
	"github.com/ontoflow/ontoflow/workflows"
)

// Mode is what a process runs.
type Mode int

const (
	// Dev runs everything in one process on embedded defaults.
	Dev Mode = iota
	// Serve runs the API and WebDAV against external Postgres and Temporal.
	Serve
	// Worker runs the action engine's Temporal worker only.
	Worker
)

// Option changes how Start assembles the process.
type Option func(*options)

type options struct {
	kinds    []engine.Kind
	channels []engine.Channel
	tracing  *telemetry.Tracing
}

// WithTracing traces into t instead of what the OTEL_* environment says
// (tests record spans in memory).
func WithTracing(t *telemetry.Tracing) Option {
	return func(o *options) { o.tracing = t }
}

// ExtraKinds registers operation kinds beside the built-in ones; one with
// a built-in kind's name replaces it. Tests use it to prove a kind needs
// only its own file and one registration.
func ExtraKinds(ks ...engine.Kind) Option {
	return func(o *options) { o.kinds = append(o.kinds, ks...) }
}

// ExtraChannels registers notification channels beside the built-in
// ones; one with a built-in channel's name replaces it. A channel's
// description (channelspec.Described; else the built-in's of its name, or
// its name alone) is registered with it, so definitions may name it,
// users accept it, secrets bind to it and the OpenAPI document lists it.
// Tests use it to prove a channel needs only its own file and one
// registration.
func ExtraChannels(cs ...engine.Channel) Option {
	return func(o *options) { o.channels = append(o.channels, cs...) }
}

// App is a running Ontoflow process.
type App struct {
	Mode     Mode
	Cfg      *config.Config
	Log      *slog.Logger
	DB       *gorm.DB
	Auth     *auth.Service
	Temporal client.Client
	Dev      *devserver.Server
	Worker   sdkworker.Worker
	Registry *prometheus.Registry
	// Store and Engine are the ontology and the action engine this
	// process assembled (benchmarks call the engine's steps directly).
	Store  *ontology.Store
	Engine *engine.Engine
	// Secrets holds the encrypted secrets (without a configured key it
	// serves metadata only); Outbound is the SSRF-guarded client every
	// call to a user-chosen address goes through; Mailer is nil without
	// --smtp-url.
	Secrets  *secrets.Store
	Outbound *http.Client
	Mailer   *senders.Mailer
	// Functions are the function packages and their runner.
	Functions *functions.Service

	// APIURL is the base URL the HTTP server listens on ("" without one).
	APIURL string
	// MetricsURL is where /metrics is served on --metrics-addr ("" when
	// it is not).
	MetricsURL string
	// AdminPassword is set when this start created the admin user with a
	// generated password (printed once).
	AdminPassword string

	// kinds are the operation kinds assembled (the secrets' migration
	// reads definitions through them).
	kinds *engine.Kinds
	// channelSpecs describe the notification channels assembled, to the
	// definitions, settings, secrets and OpenAPI document that name them.
	channelSpecs *channelspec.Registry
	http         *http.Server
	httpDone     chan error
	metrics      *telemetry.MetricsServer
	// tracing is nil when traces are off.
	tracing *telemetry.Tracing
	// stopTemporalMetrics ends the reporting of the Temporal SDK's
	// metrics.
	stopTemporalMetrics func()
	// stopSweeps ends the background purge of expired branches and waits
	// for it.
	stopSweeps func()
	// stopDispatcher ends the automations' dispatcher and waits for it.
	stopDispatcher func()
	// dav is the WebDAV handler (its sweeper runs with the other sweeps).
	dav *webdav.Handler
	// davContents is the contents store of --webdav-store (nil in POSIX
	// mode), shared by the handler and the media references.
	davContents contents.Store
}

// Start brings up the parts of mode and returns once they are serving.
func Start(ctx context.Context, mode Mode, cfg *config.Config, log *slog.Logger, opts ...Option) (a *App, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	a = &App{Mode: mode, Cfg: cfg, Log: log, Registry: prometheus.NewRegistry()}
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	started := a // the error returns below set a to nil
	defer func() {
		if err != nil {
			started.Stop(context.Background())
		}
	}()
	if a.tracing = o.tracing; a.tracing == nil {
		if a.tracing, err = telemetry.TracingFromEnv(ctx); err != nil {
			return nil, err
		}
	}
	// The database first: one this binary refuses (a newer schema) stops
	// the start before the embedded Temporal server touches its state.
	if err := a.openDatabase(ctx); err != nil {
		return nil, err
	}
	temporalAddr := cfg.TemporalAddress
	if mode == Dev {
		if temporalAddr, err = a.startDevServer(ctx); err != nil {
			return nil, err
		}
	}
	if err := a.dialTemporal(ctx, temporalAddr); err != nil {
		return nil, err
	}
	if err := a.assemble(ctx, o); err != nil {
		return nil, err
	}
	if err := MigrateData(ctx, a.DB, a.Log, a.kinds); err != nil {
		return nil, err
	}
	if mode == Dev || mode == Worker {
		if err := a.startWorker(ctx); err != nil {
			return nil, err
		}
	}
	if mode == Dev || mode == Serve {
		if err := a.startHTTP(ctx, a.Store, a.Engine); err != nil {
			return nil, err
		}
	}
	if err := a.serveMetrics(); err != nil {
		return nil, err
	}
	return a, nil
}

// serveMetrics serves the registry on --metrics-addr when there is one
// (worker by default, dev on request; serve answers on --http-addr).
func (a *App) serveMetrics() error {
	if a.Cfg.MetricsAddr == "" || a.Mode == Serve {
		return nil
	}
	var err error
	if a.metrics, err = telemetry.ServeMetrics(a.Cfg.MetricsAddr, a.Registry, a.Log); err != nil {
		return err
	}
	a.MetricsURL = a.metrics.URL()
	return nil
}

// startDevServer starts the embedded Temporal server (and its UI) and
// returns its frontend's address.
func (a *App) startDevServer(ctx context.Context) (string, error) {
	cfg := a.Cfg
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return "", fmt.Errorf("create data directory: %w", err)
	}
	var err error
	a.Dev, err = devserver.Start(ctx, devserver.Config{
		DataDir:          filepath.Join(cfg.DataDir, "temporal"),
		FrontendPort:     cfg.TemporalPort,
		UIPort:           cfg.UIPort,
		HistoryCacheSize: cfg.TemporalCacheSize,
		Namespace:        cfg.TemporalNamespace,
		SearchAttributes: workflows.SearchAttributes(),
		Logger:           a.Log,
	})
	if err != nil {
		return "", fmt.Errorf("start embedded temporal: %w", err)
	}
	if cfg.UIURL == "" {
		cfg.UIURL = a.Dev.UIAddress()
	}
	return a.Dev.FrontendAddress(), nil
}

// openDatabase opens and migrates the database, then sets up what reads
// it first: authentication, the outbound client and (dev) the admin.
func (a *App) openDatabase(ctx context.Context) error {
	var err error
	if a.DB, err = models.Open(ctx, a.Cfg.DatabaseURL); err != nil {
		return err
	}
	if err := models.Migrate(ctx, a.DB); err != nil {
		return err
	}
	sqlDB, err := a.DB.DB()
	if err != nil {
		return fmt.Errorf("database pool: %w", err)
	}
	a.Registry.MustRegister(collectors.NewDBStatsCollector(sqlDB, "ontoflow"))
	storegauges.Register(a.Registry, a.DB, a.Log)
	if err := a.tracing.TraceDB(a.DB); err != nil {
		return err
	}
	a.Auth = auth.NewService(a.DB, auth.Options{UserCacheTTL: a.Cfg.UserCacheTTL})
	if err := a.setUpOutbound(); err != nil {
		return err
	}
	if a.Mode == Dev {
		return a.ensureAdmin(ctx)
	}
	return nil
}

// MigrateData brings stored data to what this version expects, after the
// schema (models.Migrate): it gives secrets stored before use policies
// existed theirs, judging definitions by ks (nil: the built-in ones),
// fills the execution rollups from the executions once (schema version
// 4; execstore keeps them from then on) and deletes the hourly totals
// version 4 kept (5). Every start runs it before serving; so does
// `ontoflow migrate`. It is idempotent.
func MigrateData(ctx context.Context, db *gorm.DB, log *slog.Logger, ks *engine.Kinds) error {
	if ks == nil {
		ks = kinds.Registry()
	}
	if _, err := secrets.MigratePolicies(ctx, db, log, ks.Domain().SecretUses); err != nil {
		return err
	}
	start := time.Now()
	store := execstore.New(db)
	ran, err := store.BackfillRollup(ctx)
	if ran {
		log.Info("filled the execution rollup from the executions", "took", time.Since(start))
	}
	if err != nil {
		return err
	}
	dropped, err := store.DropHourTotals(ctx)
	if dropped > 0 {
		log.Info("deleted the hourly execution totals of schema version 4", "rows", dropped)
	}
	return err
}

// dialTemporal connects to Temporal; against a server it did not start,
// it registers the search attributes executions use.
func (a *App) dialTemporal(ctx context.Context, addr string) error {
	var (
		err  error
		opts DialOptions
	)
	if opts.Interceptors, err = a.tracing.Interceptors(); err != nil {
		return err
	}
	opts.Metrics, a.stopTemporalMetrics = telemetry.TemporalMetrics(a.Registry, a.Log)
	if a.Temporal, err = Dial(ctx, addr, a.Cfg.TemporalNamespace, a.Log, opts); err != nil {
		return err
	}
	if a.Mode == Dev {
		return nil
	}
	return devserver.EnsureSearchAttributes(ctx, a.Temporal, a.Cfg.TemporalNamespace, workflows.SearchAttributes())
}

// assemble builds the ontology store and the engine over the operation
// kinds action types may use: the store checks definitions and the engine
// runs actions with the same registry. Kinds holding dependencies replace
// their built-in zero values.
func (a *App) assemble(ctx context.Context, o options) error {
	cfg := a.Cfg
	// The store the WebDAV handler serves (handler below), opened first
	// because every process running the engine reads media references
	// from it, the worker too, and functions' test runs read it
	// (ctx.media).
	contents, err := a.webdavContents(ctx)
	if err != nil {
		return err
	}
	a.davContents = contents
	media, mediaErr := a.mediaFiles(contents)
	if mediaErr != nil {
		a.Log.Error("media references to WebDAV files are off", "err", mediaErr)
	}
	a.Functions = functions.New(a.DB, functions.Options{Log: a.Log, Registerer: a.Registry,
		TestHost: invokefunction.TestHostOver(media, cfg.PublicURL)})
	// The function kind's reads go through a store of their own, built
	// before the kinds (reads consult none) that a.Store is built with.
	reads := functions.NewReads(ontology.NewStore(a.DB, cfg.Markings, nil))
	withDeps := []engine.Kind{invokewebhook.InvokeWebhook{Client: a.Outbound, Secrets: a.Secrets},
		invokefunction.InvokeFunction{Functions: a.Functions, Reads: reads, Client: a.Outbound}}
	kinds := kinds.Registry(append(withDeps, o.kinds...)...)
	a.channelSpecs = channelSpecs(o.channels)
	a.Secrets.Channels = a.channelSpecs
	storeOpts := []ontology.Option{ontology.WithSecretPolicy(a.Secrets)}
	if mediaErr == nil {
		storeOpts = append(storeOpts, ontology.WithMedia(mediaCheck(media, cfg.PublicURL)))
	}
	a.Store = ontology.NewStore(a.DB, cfg.Markings, kinds.Domain().WithChannels(a.channelSpecs), storeOpts...)
	a.kinds = kinds
	a.Engine = engine.New(engine.Deps{DB: a.DB, Ontology: a.Store, Kinds: kinds, Levels: cfg.Markings, Log: a.Log,
		Registerer: a.Registry, Channels: a.channels(o.channels), MaxRecipients: cfg.MaxRecipients,
		Media: media, PublicURL: cfg.PublicURL, Branches: whatif.New(a.DB, a.Store), Events: automations.Outbox{}})
	return nil
}

// identityProvider discovers the OpenID provider of --oidc-issuer (nil
// when it is not set). Discovery runs once, at start: a provider that
// cannot be reached fails the start with a clear error rather than the
// first sign-in.
func (a *App) identityProvider() (*oidc.Provider, error) {
	o := a.Cfg.OIDC
	if o.Issuer == "" {
		return nil, nil
	}
	public := strings.TrimSuffix(a.Cfg.PublicURL, "/")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return oidc.New(ctx, &users.Store{DB: a.DB, Levels: a.Cfg.Markings}, a.Cfg.Markings, oidc.Config{
		Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes,
		RedirectURL: public + console.Prefix + "/auth/callback", PostLogoutURL: public + console.Prefix + "/login",
		Label: o.Label,
		Mapping: oidc.Mapping{UsernameClaim: o.UsernameClaim, GroupsClaim: o.GroupsClaim, Roles: o.Roles,
			RequiredGroup: o.RequiredGroup, ClearanceClaim: o.ClearanceClaim},
	})
}

// startWorker starts the worker that runs the workflows and activities,
// and the automations' dispatcher beside it.
func (a *App) startWorker(ctx context.Context) error {
	dispatcher := a.automationDispatcher(a.Store, a.Engine)
	a.Worker = worker.New(a.Temporal, worker.Options{
		FireSchedule:    dispatcher.FireSchedule,
		TaskQueue:       a.Cfg.TaskQueue,
		StopTimeout:     a.Cfg.ShutdownTimeout,
		Activities:      activities.New(a.Engine, revert.New(a.DB, a.Store, a.Engine)),
		Registerer:      a.Registry,
		BatchChildItems: a.Cfg.BatchChildItems,
	})
	if err := a.Worker.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	a.stopDispatcher = runDispatcher(ctx, dispatcher)
	return nil
}

// executionsService is the execution lifecycle over store and eng.
func (a *App) executionsService(store *ontology.Store, eng *engine.Engine) *executions.Service {
	cfg := a.Cfg
	starter := workflows.NewStarter(a.Temporal, workflows.StarterOptions{
		TaskQueue:        cfg.TaskQueue,
		BatchChildItems:  cfg.BatchChildItems,
		BatchConcurrency: cfg.BatchConcurrency,
	})
	return executions.New(a.DB, store, eng, starter, executions.Options{
		BatchMaxItems: cfg.BatchMaxItems, BatchSyncMax: cfg.BatchSyncMax, ExecuteTimeout: cfg.ExecuteTimeout,
		LocalWorker: a.Worker != nil, UIURL: cfg.UIURL, Namespace: cfg.TemporalNamespace, BranchTTL: cfg.BranchTTL, AbandonAfter: cfg.AbandonAfter,
	})
}

// handler assembles the HTTP handler: WebDAV, the console and the API's
// routes over the executions service.
func (a *App) handler(store *ontology.Store, eng *engine.Engine) (http.Handler, *executions.Service, error) {
	cfg := a.Cfg
	dav, err := webdav.New(a.DB, a.Auth, webdav.Options{
		Contents:        a.davContents,
		Root:            filepath.Join(cfg.DataDir, "files"),
		Prefix:          "/webdav",
		MaxUploadBytes:  cfg.WebDAVMaxUpload,
		DefaultQuota:    cfg.WebDAVQuota,
		MaxLockTimeout:  cfg.WebDAVMaxLockTTL,
		MaxLocksPerUser: cfg.WebDAVMaxLocks,
		Fsync:           cfg.WebDAVFsync,
		ChecksumsInDB:   cfg.WebDAVChecksums == "db",
		Registerer:      a.Registry,
		Logger:          a.Log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("set up webdav: %w", err)
	}
	a.dav = dav
	execs := a.executionsService(store, eng)
	idp, err := a.identityProvider()
	if err != nil {
		return nil, nil, err
	}
	if idp != nil {
		a.Auth.SetJWTVerifier(idp.VerifyBearer)
		idp.TrackSessions(a.Auth, a.Secrets)
	}
	ui, err := console.New(console.Deps{Auth: a.Auth, Store: store, Executions: execs,
		Inbox: notifications.NewInbox(a.DB), Insights: insights.New(a.DB),
		OIDC: idp, NoPasswordLogin: idp != nil && !cfg.OIDC.PasswordLogin,
		Levels: cfg.Markings, TokenTTL: cfg.TokenTTL, Logger: a.Log, MaxBodyBytes: cfg.MaxBodyBytes,
		// Preview is a what-if (on a branch dropped once read): the
		// console shows notifications and webhooks that would happen too.
		Preview: console.WhatIfPreview(execs),
		Undo:    undoFunc(execs),
		Files:   dav})
	if err != nil {
		return nil, nil, err
	}
	srv := api.New(api.Deps{
		Channels:     a.channelSpecs,
		Users:        &users.Store{DB: a.DB, Levels: cfg.Markings},
		Auth:         a.Auth,
		Levels:       cfg.Markings,
		Logger:       a.Log,
		MaxBodyBytes: cfg.MaxBodyBytes,
		WebDAV:       dav,
		Registry:     a.Registry,
		TokenTTL:     cfg.TokenTTL,
		UIURL:        cfg.UIURL,
		Console:      ui,
		Ready:        a.ready,
		Routes: []func(g *gin.RouterGroup){
			api.OntologyRoutes(store),
			api.SecretRoutes(a.Secrets),
			api.AutomationRoutes(a.automationStore(store)),
			api.NotificationSettingsRoutes(&users.Notifications{DB: a.DB, Secrets: a.Secrets, Channels: a.channelSpecs}),
			api.FunctionRoutes(a.Functions, store),
			api.ActionRoutes(api.ActionDeps{Store: store, Executions: execs, Inbox: notifications.NewInbox(a.DB), BatchSyncMax: cfg.BatchSyncMax}),
			api.BranchRoutes(api.ActionDeps{Store: store, Executions: execs, Inbox: notifications.NewInbox(a.DB), BatchSyncMax: cfg.BatchSyncMax}),
		},
	})
	return srv.Handler(), execs, nil
}

// startHTTP serves the API, WebDAV and the console on --http-addr.
func (a *App) startHTTP(ctx context.Context, store *ontology.Store, eng *engine.Engine) error {
	cfg := a.Cfg
	h, execs, err := a.handler(store, eng)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	scheme := "http"
	a.http = &http.Server{
		Handler:           a.tracing.Handler(h),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(a.Log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("load TLS certificate: %w", err)
		}
		a.http.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, a.http.TLSConfig)
		scheme = "https"
	}
	a.APIURL = scheme + "://" + ln.Addr().String()
	a.httpDone = make(chan error, 1)
	go func() { a.httpDone <- a.http.Serve(ln) }()
	a.sweep(ctx, execs)
	return nil
}

// sweep purges expired what-if branches in the background until Stop.
func (a *App) sweep(ctx context.Context, execs *executions.Service) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); execs.SweepBranches(sctx, 0) }()
	davDone := make(chan struct{})
	go func() { defer close(davDone); a.dav.RunSweeper(sctx, a.Cfg.WebDAVSweepEvery) }()
	a.stopSweeps = func() { cancel(); <-done; <-davDone }
}

// setUpOutbound loads the secret keys and builds the outbound client and
// the mailer. Without a key the process still starts (secrets answer 503)
// so that deployments that use none need no key.
func (a *App) setUpOutbound() error {
	keys, err := secrets.LoadKeyring(a.Cfg.Secrets)
	switch {
	case errors.Is(err, secrets.ErrNoKey):
		a.Log.Warn("no secret key configured (ONTOFLOW_SECRET_KEY or --secret-key-file): secrets cannot be stored or used")
	case err != nil:
		return fmt.Errorf("load secret keys: %w", err)
	}
	a.Secrets = secrets.NewStore(a.DB, keys)
	a.Outbound = outbound.NewClient(outbound.Options{Allow: a.Cfg.OutboundAllow})
	a.Outbound.Transport = a.tracing.Transport(a.Outbound.Transport)
	if a.Cfg.SMTP != nil {
		if a.Mailer, err = senders.NewMailer(*a.Cfg.SMTP); err != nil {
			return err
		}
		a.Mailer.Tracer = a.tracing.Tracer("github.com/ontoflow/ontoflow/notifications/senders")
	}
	return nil
}

// channels are the notification channels this process delivers to:
// in-app, Slack and Teams always (their destinations are on the action),
// e-mail when an SMTP server is configured (otherwise recorded skipped),
// and extra (ExtraChannels), each in place of the built-in one of its name
// or added.
func (a *App) channels(extra []engine.Channel) []engine.Channel {
	cs := []engine.Channel{notifications.InApp{}, channels.Slack(a.Outbound, a.Secrets), channels.Teams(a.Outbound, a.Secrets)}
	if a.Mailer != nil {
		cs = append(cs, &channels.Email{Mailer: a.Mailer})
	}
	for _, ch := range extra {
		i := slices.IndexFunc(cs, func(c engine.Channel) bool { return c.Name() == ch.Name() })
		if i < 0 {
			cs = append(cs, ch)
			continue
		}
		cs[i] = ch
	}
	return cs
}

// channelSpecs are the built-in channels' descriptions with those of
// extra in place of the one of their name, or added.
func channelSpecs(extra []engine.Channel) *channelspec.Registry {
	reg := channelspec.Default()
	for _, ch := range extra {
		spec, described := channelspec.Spec{Name: ch.Name()}, false
		if d, ok := ch.(channelspec.Described); ok {
			spec, described = d.Spec(), true
		}
		if _, builtin := reg.Get(spec.Name); builtin && !described {
			continue // a replaced built-in keeps its description
		}
		reg = reg.With(spec)
	}
	return reg
}

// ready answers /readyz: the database, Temporal and, in S3 mode, the
// WebDAV contents store, without which every upload and download fails
// (a missing bucket was found by users' 500s, not by the probe: issue
// 45).
func (a *App) ready(ctx context.Context) error {
	if err := models.Ping(ctx, a.DB); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if _, err := a.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	if p, ok := a.davContents.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			return fmt.Errorf("webdav store: %w", err)
		}
	}
	return nil
}

// ensureAdmin creates the first admin user on an empty database.
func (a *App) ensureAdmin(ctx context.Context) error {
	us := &users.Store{DB: a.DB, Levels: a.Cfg.Markings}
	n, err := us.Count(ctx)
	if err != nil {
		return fmt.Errorf("count users: %w", err)
	}
	if n > 0 {
		return nil
	}
	pw := a.Cfg.AdminPassword
	generated := pw == ""
	if generated {
		pw = auth.RandomSecret(18)
	}
	name := a.Cfg.AdminUser
	roles := []string{auth.AdminRole}
	perms := []string{"*:*"}
	top := a.Cfg.Markings[len(a.Cfg.Markings)-1]
	if _, err := us.Create(ctx, users.Spec{Username: &name, Password: &pw, Roles: &roles, Permissions: &perms, Clearance: &top}); err != nil {
		return fmt.Errorf("create admin user: %w", err)
	}
	if generated {
		a.AdminPassword = pw
	}
	return nil
}

// Wait blocks until ctx ends or the HTTP server fails.
func (a *App) Wait(ctx context.Context) error {
	if a.httpDone == nil {
		<-ctx.Done()
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-a.httpDone:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("http server: %w", err)
	}
}

// tracingFlushTimeout bounds the sending of the spans still buffered at
// Stop.
const tracingFlushTimeout = 3 * time.Second

// Stop shuts down gracefully: in-flight HTTP requests finish (up to the
// shutdown timeout), the worker stops polling and lets running activities
// finish, then the clients, database and embedded server close.
func (a *App) Stop(ctx context.Context) {
	timeout := a.Cfg.ShutdownTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if a.http != nil {
		if err := a.http.Shutdown(ctx); err != nil {
			a.Log.Warn("http shutdown", "err", err)
		}
	}
	if a.stopSweeps != nil {
		a.stopSweeps()
	}
	if a.stopDispatcher != nil {
		a.stopDispatcher()
	}
	if a.Worker != nil {
		a.Worker.Stop()
	}
	if a.Temporal != nil {
		a.Temporal.Close()
	}
	if a.stopTemporalMetrics != nil {
		a.stopTemporalMetrics()
	}
	if a.metrics != nil {
		if err := a.metrics.Shutdown(ctx); err != nil {
			a.Log.Warn("metrics server shutdown", "err", err)
		}
	}
	if a.tracing != nil {
		// A collector that is down must not hold the shutdown for the
		// exporter's whole timeout.
		tctx, cancel := context.WithTimeout(ctx, tracingFlushTimeout)
		if err := a.tracing.Shutdown(tctx); err != nil {
			a.Log.Warn("send the last spans", "err", err)
		}
		cancel()
	}
	if a.Functions != nil {
		if err := a.Functions.Flush(ctx); err != nil {
			a.Log.Warn("write pending function run records", "err", err)
		}
	}
	if a.DB != nil {
		if sqlDB, err := a.DB.DB(); err == nil {
			sqlDB.Close()
		}
	}
	if a.Dev != nil {
		if err := a.Dev.Stop(); err != nil {
			a.Log.Warn("embedded temporal stop", "err", err)
		}
	}
}

// DialOptions are what a process adds to its Temporal client.
type DialOptions struct {
	// Metrics receives the SDK's metrics (nil: nowhere).
	Metrics client.MetricsHandler
	// Interceptors of the client, and of its workers when they implement
	// interceptor.WorkerInterceptor (tracing does).
	Interceptors []interceptor.ClientInterceptor
}

// Dial connects to a Temporal frontend, retrying for up to a minute while it
// comes up.
func Dial(ctx context.Context, addr, ns string, log *slog.Logger, opts DialOptions) (client.Client, error) {
	var (
		c   client.Client
		err error
	)
	// The frontend may still be coming up (compose starts both at once).
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err = client.DialContext(ctx, client.Options{
			HostPort:       addr,
			Namespace:      ns,
			Logger:         telemetry.SDKLogger(log.With("component", "temporal-sdk"), workflows.ExecutionIDOf),
			MetricsHandler: opts.Metrics,
			Interceptors:   opts.Interceptors,
		})
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("connect to temporal at %s: %w", addr, err)
		}
		log.Info("waiting for temporal", "address", addr, "err", err)
		time.Sleep(time.Second)
	}
}

// undoFunc is the console's Undo: a revert through the executions
// service, waited for, as the revert route does.
func undoFunc(execs *executions.Service) console.UndoFunc {
	return func(ctx context.Context, p *auth.Principal, id, justification string) (*models.Execution, error) {
		h, err := execs.Revert(ctx, executions.RevertRequest{ExecutionID: id, Actor: p.User, Guest: p.Guest, Justification: justification}, true)
		if err != nil {
			return nil, err
		}
		return execs.Wait(ctx, h)
	}
}
