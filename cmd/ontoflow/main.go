// Command ontoflow runs the Ontoflow service.
//
//	ontoflow dev      everything in one process on embedded defaults
//	ontoflow serve    API + WebDAV against Postgres and an external Temporal
//	ontoflow worker   the action engine's Temporal worker
//	ontoflow migrate  bring the database schema up to date
//	ontoflow users    add, list and update service users
//	ontoflow secrets  generate and rotate the key secrets are encrypted with
//	ontoflow webdav   migrate-store: move WebDAV trees between POSIX and S3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/config"
	"github.com/ontoflow/ontoflow/devserver"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/telemetry"
	"github.com/ontoflow/ontoflow/workflows"
)

const usage = `Usage: ontoflow <command> [flags]

Commands:
  dev       run API, WebDAV, a worker, an embedded Temporal server and its Web UI
            in one process, state under --data-dir (the default way to run it)
  serve     run the API and WebDAV against DATABASE_URL and TEMPORAL_ADDRESS
  worker    run the action engine's worker against DATABASE_URL and TEMPORAL_ADDRESS
  migrate   bring the database schema up to date (idempotent); with
            --temporal-address also registers Ontoflow's search attributes
  users     manage service users: add, list, show, update, passwd
  secrets   secret keys: gen-key, rotate-key
  webdav    migrate-store: copy WebDAV trees between the POSIX layout and S3
  probe     GET a URL and exit 0 on 200 (container health checks; the
            image has no curl)

Run 'ontoflow <command> -h' for the flags of a command; every flag also reads
an environment variable, named in its help.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "dev":
		err = run(app.Dev, config.ModeDev, args)
	case "serve":
		err = run(app.Serve, config.ModeServe, args)
	case "worker":
		err = run(app.Worker, config.ModeWorker, args)
	case "migrate":
		err = migrate(args)
	case "users":
		err = usersCmd(args, os.Stdout)
	case "secrets":
		err = secretsCmd(args, os.Stdout)
	case "webdav":
		err = webdavCmd(args, os.Stdout)
	case "probe":
		err = probe(args)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "ontoflow: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "ontoflow %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

func parse(name string, mode config.Mode, args []string) (*config.Config, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("ontoflow "+name, flag.ContinueOnError)
	cfg, check := config.Bind(fs, mode)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if err := check(); err != nil {
		return nil, nil, err
	}
	return cfg, fs, nil
}

func newLogger(cfg *config.Config) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(os.Stderr, opts)
	}
	l := slog.New(telemetry.LogHandler(h))
	slog.SetDefault(l)
	return l
}

func run(mode app.Mode, cmode config.Mode, args []string) error {
	names := map[app.Mode]string{app.Dev: "dev", app.Serve: "serve", app.Worker: "worker"}
	cfg, _, err := parse(names[mode], cmode, args)
	if err != nil {
		return err
	}
	log := newLogger(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	began := time.Now()
	a, err := app.Start(ctx, mode, cfg, log)
	if err != nil {
		return err
	}
	printBanner(os.Stdout, a, time.Since(began))
	err = a.Wait(ctx)
	stop()
	log.Info("shutting down")
	a.Stop(context.Background())
	return err
}

// printBanner tells where everything is. It is written in one piece so a
// reader that waits for "ready" sees the whole banner.
func printBanner(w io.Writer, a *app.App, took time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "Ontoflow %s ready in %s\n", map[app.Mode]string{app.Dev: "dev", app.Serve: "serve", app.Worker: "worker"}[a.Mode], took.Round(time.Millisecond))
	if a.APIURL != "" {
		fmt.Fprintf(&b, "  API:         %s/api/v1/  (OpenAPI: %s/openapi.yaml)\n", a.APIURL, a.APIURL)
		fmt.Fprintf(&b, "  Console:     %s/ui/\n", a.APIURL)
		fmt.Fprintf(&b, "  WebDAV:      %s/webdav/\n", a.APIURL)
		fmt.Fprintf(&b, "  Health:      %s/healthz  %s/readyz  metrics: %s/metrics\n", a.APIURL, a.APIURL, a.APIURL)
	}
	if a.MetricsURL != "" {
		fmt.Fprintf(&b, "  Metrics:     %s\n", a.MetricsURL)
	}
	if a.Dev != nil {
		fmt.Fprintf(&b, "  Temporal:    %s (namespace %s)\n", a.Dev.FrontendAddress(), a.Cfg.TemporalNamespace)
		if ui := a.Dev.UIAddress(); ui != "" {
			fmt.Fprintf(&b, "  Temporal UI: %s\n", ui)
		}
		fmt.Fprintf(&b, "  Data:        %s\n", a.Cfg.DataDir)
	}
	if a.AdminPassword != "" {
		fmt.Fprintf(&b, "  Created user %q with password %s\n  (shown once; change it with 'ontoflow users passwd %s')\n",
			a.Cfg.AdminUser, a.AdminPassword, a.Cfg.AdminUser)
	}
	io.WriteString(w, b.String())
}

// probe is a health check for images without curl: GET the URL, succeed on
// 200.
func probe(args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Println("usage: ontoflow probe URL (exit 0 when URL answers 200)")
		return flag.ErrHelp
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: ontoflow probe URL")
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(args[0])
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", args[0], resp.Status)
	}
	return nil
}

func migrate(args []string) error {
	fs := flag.NewFlagSet("ontoflow migrate", flag.ContinueOnError)
	cfg, check := config.Bind(fs, config.ModeAdmin)
	var temporalAddr, ns string
	fs.StringVar(&temporalAddr, "temporal-address", os.Getenv("TEMPORAL_ADDRESS"), "also register search attributes on this Temporal frontend (env TEMPORAL_ADDRESS)")
	fs.StringVar(&ns, "temporal-namespace", envOr("TEMPORAL_NAMESPACE", "default"), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	log := newLogger(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db, err := models.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	if err := models.Migrate(ctx, db); err != nil {
		return err
	}
	if err := app.MigrateData(ctx, db, log, nil); err != nil {
		return err
	}
	fmt.Println("database schema is up to date")
	if temporalAddr != "" {
		c, err := app.Dial(ctx, temporalAddr, ns, log, app.DialOptions{})
		if err != nil {
			return err
		}
		defer c.Close()
		if err := devserver.EnsureSearchAttributes(ctx, c, ns, workflows.SearchAttributes()); err != nil {
			return err
		}
		fmt.Println("search attributes registered on", temporalAddr, "namespace", ns)
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// splitList parses "a,b,c" ("" = empty list).
func splitList(s string) []string {
	out := []string{}
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
