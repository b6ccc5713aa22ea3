// Package devtest starts an in-process `ontoflow dev` stack for tests:
// the whole process as app.Start assembles it (embedded Temporal, SQLite
// in a temporary data directory unless the flags say otherwise, HTTP on a
// free loopback port), stopped when the test ends.
package devtest

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/config"
)

// Start starts dev with the admin password and more flags (later flags win
// over the defaults, e.g. --data-dir or --log-level); log nil discards the
// process's log.
func Start(t testing.TB, adminPassword string, more []string, log *slog.Logger, opts ...app.Option) *app.App {
	t.Helper()
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	cfg, check := config.Bind(fs, config.ModeDev)
	args := append([]string{"--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--temporal-port", "0", "--ui-port", "-1",
		"--admin-password", adminPassword, "--log-level", "error"}, more...)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := check(); err != nil {
		t.Fatal(err)
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, err := app.Start(ctx, app.Dev, cfg, log, opts...)
	if err != nil {
		t.Fatalf("start dev: %v", err)
	}
	t.Cleanup(func() { a.Stop(context.Background()) })
	return a
}
