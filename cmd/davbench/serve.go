//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/users"
	"github.com/ontoflow/ontoflow/webdav"
	"github.com/ontoflow/ontoflow/webdav/contents"
)

// serve runs the WebDAV handler until ctx ends (SIGTERM from the parent).
func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	root := fs.String("root", "", "data directory (each user's tree is ROOT/<user id>)")
	dbPath := fs.String("db", "", "SQLite database file (default: ROOT/../ontoflow.db)")
	addr := fs.String("addr", "127.0.0.1:8092", "listen address")
	user := fs.String("user", "", "create this user if it does not exist (with --password)")
	password := fs.String("password", "", "password of --user")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole serve run to FILE")
	logPath := fs.String("log", "", "append access logs (JSON) to FILE; empty = stderr")
	store := fs.String("store", "posix", "WebDAV store: posix (trees under --root) or s3://bucket/prefix?endpoint=... (credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" {
		return errors.New("--root is required")
	}
	if *dbPath == "" {
		*dbPath = filepath.Join(filepath.Dir(filepath.Clean(*root)), "ontoflow.db")
	}

	var logOut io.Writer = os.Stderr
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			return fmt.Errorf("open access log: %w", err)
		}
		defer f.Close()
		logOut = f
	}
	// The production API logs WebDAV access through slog at Info; Apache
	// writes an access log too, so both sides pay for one line a request.
	logger := slog.New(slog.NewJSONHandler(logOut, nil))

	db, err := openDB(ctx, *dbPath)
	if err != nil {
		return err
	}
	if *user != "" {
		id, err := ensureUser(ctx, db, *user, *password)
		if err != nil {
			return err
		}
		slog.Info("user ready", "user", *user, "id", id)
	}
	authn := auth.NewService(db, auth.Options{})
	contents, err := openStore(ctx, *store)
	if err != nil {
		return err
	}
	h, err := webdav.New(db, authn, webdav.Options{
		Contents:       contents,
		Root:           *root,
		Prefix:         "/webdav",
		MaxUploadBytes: 10 << 30, // the config default (--webdav-max-upload)
		DefaultQuota:   0,
		MaxLockTimeout: time.Hour,
		Registerer:     prometheus.NewRegistry(),
		Logger:         logger,
	})
	if err != nil {
		return fmt.Errorf("create webdav handler: %w", err)
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("create cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("start cpu profile: %w", err)
		}
		// Stopped after the server has drained, so the profile holds every
		// request the run sent.
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	// Timeouts as in app.startHTTP, so the handler runs as in production.
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	go settleOnSignal(ctx)
	slog.Info("serving", "addr", ln.Addr().String(), "root", *root, "db", *dbPath, "pid", os.Getpid())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// settleOnSignal collects garbage and returns free memory to the OS on
// SIGUSR1. The run sends it before the memory benchmark so that the
// baseline is the state an idle server reaches by itself within a couple of
// minutes (the runtime forces a GC every 2 minutes and the scavenger then
// releases the pages), instead of still holding the warm-up's garbage
// (for instance the 19 MiB of the first argon2id verification), which a
// PROPFIND could refill without the RSS moving.
func settleOnSignal(ctx context.Context) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	defer signal.Stop(c)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c:
			runtime.GC()
			debug.FreeOSMemory()
		}
	}
}

func openDB(ctx context.Context, path string) (*gorm.DB, error) {
	db, err := models.Open(ctx, "sqlite:"+path)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := models.Migrate(ctx, db); err != nil {
		return nil, fmt.Errorf("migrate database %s: %w", path, err)
	}
	return db, nil
}

// ensureUser returns the id of username, creating it with password first if
// it does not exist.
func ensureUser(ctx context.Context, db *gorm.DB, username, password string) (string, error) {
	var u models.User
	err := db.WithContext(ctx).Where("username = ?", username).Take(&u).Error
	if err == nil {
		return u.ID, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return "", fmt.Errorf("look up user %s: %w", username, err)
	}
	nu, err := (&users.Store{DB: db, Levels: auth.DefaultLevels}).Create(ctx, users.Spec{Username: &username, Password: &password})
	if err != nil {
		return "", fmt.Errorf("create user %s: %w", username, err)
	}
	return nu.ID, nil
}

// openStore opens the contents store --store names: nil for posix.
func openStore(ctx context.Context, store string) (contents.Store, error) {
	st, err := webdav.ParseStoreURL(store)
	if err != nil || st.Kind == "posix" {
		return nil, err
	}
	c, err := contents.OpenS3(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", store, err)
	}
	return c, nil
}
