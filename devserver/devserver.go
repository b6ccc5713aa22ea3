// Package devserver embeds a real Temporal server (SQLite persistence) and the
// Temporal Web UI in the Ontoflow process. It backs `ontoflow dev` and tests.
//
// Everything binds to 127.0.0.1 by default, ports are picked free unless fixed,
// the server makes no outbound calls (version check and UI news fetch are off)
// and its logs go to an slog.Logger at WARN and above unless told otherwise.
package devserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"

	// SQLite's process-wide options, set before the first connection.
	_ "github.com/ontoflow/ontoflow/sqliteconf"

	"github.com/ontoflow/ontoflow/defaults"
)

// Config configures an embedded Temporal dev server.
type Config struct {
	// DataDir holds the SQLite file (DataDir/temporal.db). The schema is
	// created on the first start only; later starts reuse the database.
	// Required unless Ephemeral is set.
	DataDir string
	// Host is the bind address of every listener. Default "127.0.0.1".
	Host string
	// FrontendPort is the frontend gRPC port; 0 picks a free port.
	FrontendPort int
	// UIPort is the Web UI port; 0 picks a free port, -1 disables the UI.
	UIPort int
	// Namespace is created if missing. Default "default".
	Namespace string
	// SearchAttributes are registered on Namespace at every start
	// (idempotently; attributes already present are kept).
	SearchAttributes map[string]enumspb.IndexedValueType
	// NumHistoryShards is used only when the database is created. Default 4.
	NumHistoryShards int32
	// Logger receives the server's logs. Default slog.Default().
	Logger *slog.Logger
	// LogLevel is the minimum level passed to Logger: debug, info, warn
	// (default) or error.
	LogLevel string
	// Ephemeral uses an in-memory SQLite database; DataDir is ignored.
	Ephemeral bool
	// HistoryCacheSize bounds the history service's host-level cache of
	// workflow mutable states (history.hostLevelCacheMaxSize), in
	// workflows. 0 means DefaultHistoryCacheSize.
	HistoryCacheSize int
	// DynamicConfig holds extra dynamic config values (key -> value), merged
	// over this package's defaults. A value may be a plain value or a
	// []dynamicconfig.ConstrainedValue.
	DynamicConfig map[string]any

	// metricsHandler receives the server's metrics (tests read the cache
	// sizes the running server set up); default none.
	metricsHandler metrics.Handler
}

// Server is a running embedded Temporal server (and optionally its Web UI).
type Server struct {
	namespace    string
	frontendAddr string
	httpAddr     string
	uiAddr       string

	temporal temporal.Server
	// dynamicConfig is the dynamic config the server was built with.
	dynamicConfig dynamicconfig.Client
	ui            *uiServer
	unlock        func()
	log           *slogAdapter

	stopOnce sync.Once
	stopErr  error
}

const (
	dbFileName         = "temporal.db"
	visibilityFileName = "temporal-visibility.db"
	clusterName        = "active"
	defaultHost        = "127.0.0.1"
	defaultNamespace   = "default"
	defaultShards      = 4
	readinessTimeout   = 60 * time.Second
	uiShutdownDeadline = 5 * time.Second
)

// DefaultHistoryCacheSize is the default of Config.HistoryCacheSize: about
// 100 MiB of heap at the ~50 KB a cached action execution takes.
const DefaultHistoryCacheSize = defaults.HistoryCacheSize

// defaultDynamicConfig are the settings that make the SQLite-backed server fast
// and silent, and size its caches for a process that shares a laptop with an
// API (docs/memory.md has the measurements behind them).
func defaultDynamicConfig(historyCacheSize int) map[string]any {
	return map[string]any{
		// Default 20/s per shard adds 40-50 ms to every hand-off under load.
		"history.transferProcessorMaxPollRPS": 1000,
		"history.timerProcessorMaxPollRPS":    1000,
		"history.outboundProcessorMaxPollRPS": 1000,
		// Visibility is on no workflow's path, so its queue is read at most
		// 4 times a second per shard, in batches. A workflow that closes
		// before its start task is read (an action execution, in
		// milliseconds) is then written to visibility once, by its close:
		// the start task finds it closed and skips its insert. That halves
		// the visibility writes of short executions, the largest single
		// cost of each on this SQLite store (action engine throughput
		// ~95 -> ~130/s); the UI's list lags by at most ~250 ms.
		"history.visibilityProcessorMaxPollRPS": 4,
		"history.shardIOConcurrency":            4,
		// No outbound call to the version-check service.
		"frontend.enableServerVersionCheck": false,
		// The host-level cache of workflow mutable states defaults to
		// 128,000 workflows for an hour: sized for a dedicated history
		// host, it grew an embedded process by ~50 KB per execution into
		// gigabytes. Bounded by count: Temporal's byte-based limit
		// (history.cacheSizeBasedLimit) counts a state's serialized size,
		// a small fraction of the ~50 KB it holds in the heap: 16 MiB by
		// that count still grew the process to 849 MiB in 150 s of load
		// and on, 2,000 workflows held it flat at ~430 MiB. An action
		// execution is done in milliseconds, so the recent states are all
		// its hand-offs need.
		dynamicconfig.HistoryCacheSizeBasedLimit.Key().String():   false,
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key().String(): historyCacheSize,
		// The per-shard events cache is 512 KiB by Temporal's default
		// (4 shards: 2 MiB); said here so an upgrade cannot raise it. The
		// host-level events cache is off, but created all the same with a
		// 256 MiB bound: bounded to the shards' total should it be used.
		dynamicconfig.EventsCacheMaxSizeBytes.Key().String():          512 << 10,
		dynamicconfig.EnableHostLevelEventsCache.Key().String():       false,
		dynamicconfig.EventsHostLevelCacheMaxSizeBytes.Key().String(): 2 << 20,
		// Replication progress (128,000 entries by default) only fills
		// with several clusters; bounded all the same.
		dynamicconfig.ReplicationProgressCacheMaxSize.Key().String(): 1000,
	}
}

// Start starts the server and returns once the frontend is usable: the
// namespace is describable, history and matching answer, and every configured
// search attribute is registered and accepted in visibility queries. If the
// UI is enabled it is listening when Start returns.
//
// ctx bounds the start-up; it is not retained.
//
// The internal ports are picked free just before the server binds them, so
// another process can take one in between; such a start is retried with
// fresh ports.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, cfg)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") || ctx.Err() != nil {
			return s, err
		}
		log := cfg.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Warn("embedded temporal: a port was taken while starting; retrying", "attempt", attempt, "err", err)
	}
}

func start(ctx context.Context, cfg Config) (_ *Server, retErr error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	filtered, err := newFilteredLogger(cfg.Logger, cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	logger := newServerLogger(filtered, cfg.Logger)

	s := &Server{namespace: cfg.Namespace, log: logger}
	var cleanups []func()
	defer func() {
		if retErr != nil {
			for i := len(cleanups) - 1; i >= 0; i-- {
				cleanups[i]()
			}
		}
	}()

	// Persistence.
	sqlCfg, visCfg, unlock, err := prepareDatabase(cfg)
	if err != nil {
		return nil, err
	}
	s.unlock = unlock
	cleanups = append(cleanups, unlock)

	// Ports. Explicit ports are checked up front: the server treats a failed
	// listen as fatal, which we turn into an error rather than an exit.
	ports, err := pickFreePorts(cfg.Host, 9)
	if err != nil {
		return nil, err
	}
	frontendPort := cfg.FrontendPort
	if frontendPort == 0 {
		frontendPort = ports[0]
	} else if err := checkBindable(cfg.Host, frontendPort); err != nil {
		return nil, fmt.Errorf("devserver: frontend port: %w", err)
	}
	advertise := advertiseHost(cfg.Host)
	s.frontendAddr = net.JoinHostPort(advertise, strconv.Itoa(frontendPort))
	s.httpAddr = net.JoinHostPort(advertise, strconv.Itoa(ports[1]))

	// The UI listener is bound before the server starts so a taken UI port
	// fails fast; it only serves once the frontend is usable.
	var uiLn net.Listener
	if cfg.UIPort >= 0 {
		uiLn, err = net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.UIPort)))
		if err != nil {
			return nil, fmt.Errorf("devserver: UI port: %w", err)
		}
		cleanups = append(cleanups, func() { _ = uiLn.Close() })
	}

	// Namespace (and its search attributes when the namespace is new).
	nsCfg, err := sqlite.NewNamespaceConfig(clusterName, cfg.Namespace, false, cfg.SearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("devserver: namespace config: %w", err)
	}
	if err := sqlite.CreateNamespaces(sqlCfg, nsCfg); err != nil {
		return nil, fmt.Errorf("devserver: create namespace: %w", err)
	}

	srvCfg := buildServerConfig(cfg, sqlCfg, visCfg, advertise, frontendPort, ports[1], ports[2:9])
	dc := dynamicconfig.StaticClient{}
	for k, v := range mergedDynamicConfig(cfg.HistoryCacheSize, cfg.DynamicConfig) {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	s.dynamicConfig = dc

	var srv temporal.Server
	err = catchFatal(func() error {
		var err error
		srv, err = temporal.NewServer(
			temporal.ForServices(temporal.DefaultServices),
			temporal.WithConfig(srvCfg),
			temporal.WithLogger(logger),
			temporal.WithDynamicConfigClient(dc),
			temporal.WithCustomMetricsHandler(cfg.metricsHandler),
		)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("devserver: new server: %w", err)
	}
	if err := catchFatal(srv.Start); err != nil {
		_ = catchFatal(srv.Stop)
		return nil, fmt.Errorf("devserver: start server: %w", err)
	}
	s.temporal = srv
	cleanups = append(cleanups, func() { _ = catchFatal(srv.Stop) })

	readyCtx, cancel := context.WithTimeout(ctx, readinessTimeout)
	defer cancel()
	if err := waitReady(readyCtx, s.frontendAddr, cfg.Namespace, cfg.SearchAttributes, namespaceRefreshInterval(cfg.DynamicConfig)); err != nil {
		return nil, fmt.Errorf("devserver: server not ready: %w", err)
	}
	logger.phase.Store(phaseRunning)

	if uiLn != nil {
		ui, err := startUI(uiLn, s.frontendAddr, cfg.Namespace, filtered)
		if err != nil {
			return nil, fmt.Errorf("devserver: UI: %w", err)
		}
		s.ui = ui
		s.uiAddr = "http://" + net.JoinHostPort(advertise, strconv.Itoa(uiLn.Addr().(*net.TCPAddr).Port))
	}
	return s, nil
}

// FrontendAddress is the frontend gRPC host:port, e.g. "127.0.0.1:7233".
func (s *Server) FrontendAddress() string { return s.frontendAddr }

// HTTPAddress is the frontend's HTTP API host:port (Temporal's HTTP/JSON API).
func (s *Server) HTTPAddress() string { return s.httpAddr }

// UIAddress is the Web UI base URL, e.g. "http://127.0.0.1:8233", or "" when
// the UI is disabled.
func (s *Server) UIAddress() string { return s.uiAddr }

// Namespace is the namespace created/registered at start.
func (s *Server) Namespace() string { return s.namespace }

// Stop stops the UI and the server gracefully. It is idempotent; later calls
// return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.log.phase.Store(phaseStopping)
		var errs []error
		if s.ui != nil {
			ctx, cancel := context.WithTimeout(context.Background(), uiShutdownDeadline)
			errs = append(errs, s.ui.stop(ctx))
			cancel()
		}
		if s.temporal != nil {
			errs = append(errs, catchFatal(s.temporal.Stop))
		}
		if s.unlock != nil {
			s.unlock()
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

func (cfg *Config) normalize() error {
	if cfg.Host == "" {
		cfg.Host = defaultHost
	}
	if cfg.Host == "localhost" {
		cfg.Host = defaultHost
	}
	if net.ParseIP(cfg.Host) == nil {
		return fmt.Errorf("devserver: Host must be an IP address, got %q", cfg.Host)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = defaultNamespace
	}
	if cfg.NumHistoryShards <= 0 {
		cfg.NumHistoryShards = defaultShards
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.metricsHandler == nil {
		cfg.metricsHandler = metrics.NoopMetricsHandler
	}
	if cfg.HistoryCacheSize == 0 {
		cfg.HistoryCacheSize = DefaultHistoryCacheSize
	}
	if cfg.HistoryCacheSize < 0 {
		return fmt.Errorf("devserver: invalid HistoryCacheSize %d", cfg.HistoryCacheSize)
	}
	if cfg.FrontendPort < 0 || cfg.FrontendPort > 65535 {
		return fmt.Errorf("devserver: invalid FrontendPort %d", cfg.FrontendPort)
	}
	if cfg.UIPort < -1 || cfg.UIPort > 65535 {
		return fmt.Errorf("devserver: invalid UIPort %d", cfg.UIPort)
	}
	if !cfg.Ephemeral && cfg.DataDir == "" {
		return errors.New("devserver: DataDir is required unless Ephemeral is set")
	}
	return nil
}

// advertiseHost is the address clients dial: the bind address, or loopback
// when binding to all interfaces.
func advertiseHost(host string) string {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return defaultHost
	}
	return host
}

func mergedDynamicConfig(historyCacheSize int, extra map[string]any) map[string]any {
	m := defaultDynamicConfig(historyCacheSize)
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// namespaceRefreshInterval is how long other services may take to see a
// namespace change (system.namespaceCacheRefreshInterval, default 2s).
func namespaceRefreshInterval(extra map[string]any) time.Duration {
	for k, v := range extra {
		if dynamicconfig.MakeKey(k) == dynamicconfig.MakeKey("system.namespaceCacheRefreshInterval") {
			if d, ok := v.(time.Duration); ok {
				return d
			}
		}
	}
	return 2 * time.Second
}

func clearMembership(dbPath string) error {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return fmt.Errorf("devserver: open database: %w", err)
	}
	defer db.Close()
	if _, err := db.Exec("DELETE FROM cluster_membership"); err != nil {
		return fmt.Errorf("devserver: clear stale cluster membership: %w", err)
	}
	return nil
}

// prepareDatabase returns the SQLite configs of the server's stores,
// creating their schemas when the database files are new. For a file
// database it also takes an exclusive lock on DataDir so that two servers
// cannot share one database.
//
// Visibility (the index the UI lists and filters) lives in a second file
// when the data directory is created by this version: each SQLite file is
// served by exactly one connection, and with one file the visibility
// writes of every start and close queued behind the history writes on it
// (a quarter of the server's CPU under 50 concurrent executions, most of
// it parsing the wide REPLACE INTO of the visibility row). visCfg is nil
// for a data directory created with one file, which keeps working as it
// was.
func prepareDatabase(cfg Config) (sqlCfg, visCfg *config.SQL, unlock func(), err error) {
	newCfg := func() *config.SQL {
		return &config.SQL{
			PluginName:        "sqlite",
			ConnectAttributes: map[string]string{},
			// Exactly one connection: more give SQLITE_BUSY and are slower.
			MaxConns:     1,
			MaxIdleConns: 1,
		}
	}
	sqlCfg = newCfg()
	if cfg.Ephemeral {
		sqlCfg.DatabaseName = "devserver-" + randomHex(8)
		sqlCfg.ConnectAttributes["mode"] = "memory"
		sqlCfg.ConnectAttributes["cache"] = "shared"
		// The sqlite plugin creates the schema of an in-memory database itself.
		return sqlCfg, nil, func() {}, nil
	}

	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, nil, nil, fmt.Errorf("devserver: data dir: %w", err)
	}
	dbPath, err := filepath.Abs(filepath.Join(cfg.DataDir, dbFileName))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("devserver: data dir: %w", err)
	}
	visPath := filepath.Join(filepath.Dir(dbPath), visibilityFileName)
	unlock, err = lockFile(dbPath + ".lock")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("devserver: data dir %s is in use by another server: %w", cfg.DataDir, err)
	}
	fileCfg := func(path string) *config.SQL {
		c := newCfg()
		c.DatabaseName = path
		c.ConnectAttributes["mode"] = "rwc"
		c.ConnectAttributes["journal_mode"] = "wal"
		c.ConnectAttributes["synchronous"] = "normal"
		return c
	}
	sqlCfg = fileCfg(dbPath)
	removeAll := func() {
		for _, path := range []string{dbPath, visPath} {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(path + suffix)
			}
		}
	}

	fi, err := os.Stat(dbPath)
	switch {
	case err == nil && fi.Size() > 0:
		// Existing database: reuse it, minus the membership rows of the
		// previous run. Those name ports that are gone; left in place, the
		// new server waits for its membership ring to time out joining them
		// (about 45 s measured). The directory lock makes them certainly
		// stale.
		if err := clearMembership(dbPath); err != nil {
			unlock()
			return nil, nil, nil, err
		}
		if vi, err := os.Stat(visPath); err == nil && vi.Size() > 0 {
			visCfg = fileCfg(visPath)
		}
	case err == nil || errors.Is(err, os.ErrNotExist):
		visCfg = fileCfg(visPath)
		for _, c := range []*config.SQL{sqlCfg, visCfg} {
			// The schema helper creates both schemas in a file; the unused
			// half stays empty.
			if err := sqlite.SetupSchema(c); err != nil {
				removeAll()
				unlock()
				return nil, nil, nil, fmt.Errorf("devserver: create schema in %s: %w", c.DatabaseName, err)
			}
		}
		if err := trimVisibilityIndexes(visPath); err != nil {
			removeAll()
			unlock()
			return nil, nil, nil, err
		}
	default:
		unlock()
		return nil, nil, nil, fmt.Errorf("devserver: database: %w", err)
	}
	return sqlCfg, visCfg, unlock, nil
}
