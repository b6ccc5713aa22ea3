// Command soak runs the real ontoflow binary under sustained load and
// watches its memory: 8 clients executing an update_object action with an
// in-app notification, a 50-item batch every 2 s and a WebDAV client
// putting 200 files of 4 KiB and listing their folder, in a loop. Every
// 10 s it samples each process's RSS (from /proc), Go heap and goroutines
// (from /metrics, or the GC trace of a process without HTTP); after the
// load it samples an idle minute. It fails if any request fails or the
// memory targets are missed, and writes soak.csv and rss.svg.
//
//	go run ./cmd/soak [-mode dev|external] [-duration 20m] [-idle 1m] [-out DIR]
//
// -mode dev runs `ontoflow dev` (embedded Temporal). -mode external runs
// `ontoflow serve` and `ontoflow worker` against DATABASE_URL and a
// separate `ontoflow dev` process that plays the external Temporal
// server, as the end-to-end tests do; serve and worker are sampled.
// Linux only (RSS is read from /proc).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

type options struct {
	mode        string
	bin         string
	databaseURL string
	duration    time.Duration
	idle        time.Duration
	every       time.Duration
	out         string
	devArgs     string
	load        *load
	maxRSS      int64
	maxGrowth   float64
	maxIdleDiff float64
}

func main() {
	o := options{load: &load{}}
	flag.StringVar(&o.mode, "mode", "dev", "dev (one `ontoflow dev` process) or external (`serve` + `worker` against a separate Temporal)")
	flag.StringVar(&o.bin, "bin", "", "ontoflow binary (default: go build ./cmd/ontoflow into a temporary directory)")
	flag.StringVar(&o.databaseURL, "database-url", "", "external mode: database of serve and worker (default: a SQLite file in the temporary directory)")
	flag.DurationVar(&o.duration, "duration", 20*time.Minute, "time under load")
	flag.DurationVar(&o.idle, "idle", time.Minute, "idle time sampled after the load")
	flag.DurationVar(&o.every, "sample", 10*time.Second, "sampling interval")
	flag.StringVar(&o.out, "out", ".", "directory for soak.csv and rss.svg")
	flag.StringVar(&o.devArgs, "dev-args", "", "extra arguments of `ontoflow dev`, space-separated (e.g. --temporal-cache-size=64MiB)")
	flag.IntVar(&o.load.clients, "clients", 8, "clients executing the action one after another")
	flag.IntVar(&o.load.batchItems, "batch", 50, "items of each batch")
	flag.DurationVar(&o.load.batchEvery, "batch-every", 2*time.Second, "interval between batches")
	flag.IntVar(&o.load.files, "files", 200, "files the WebDAV client puts per round")
	flag.IntVar(&o.load.fileSize, "file-size", 4096, "bytes per file")
	maxRSS := flag.Int("max-rss-mib", 600, "target: RSS at the end of the load, MiB")
	flag.Float64Var(&o.maxGrowth, "max-growth", 0.05, "target: RSS growth over the last half of the load (at most the last 10 minutes)")
	flag.Float64Var(&o.maxIdleDiff, "max-idle-diff", 0.10, "target: RSS after the idle time within this fraction of the RSS at the end of the load")
	flag.Parse()
	o.maxRSS = int64(*maxRSS) << 20
	if runtime.GOOS != "linux" {
		fmt.Fprintln(os.Stderr, "soak: reads RSS from /proc; run it on Linux")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, terminate)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	tmp, err := os.MkdirTemp("", "ontoflow-soak")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.bin == "" {
		o.bin = filepath.Join(tmp, "ontoflow")
		fmt.Fprintln(os.Stderr, "soak: building ./cmd/ontoflow ...")
		if out, err := exec.Command("go", "build", "-o", o.bin, "./cmd/ontoflow").CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/ontoflow: %w\n%s", err, out)
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	procs, cleanup, err := startProcesses(ctx, o, tmp)
	defer cleanup()
	if err != nil {
		return err
	}
	o.load.api = procs[0].APIURL
	o.load.failed = make(chan struct{})
	if err := o.load.setup(ctx); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	rec, err := newRecorder(filepath.Join(o.out, "soak.csv"), procs)
	if err != nil {
		return err
	}
	defer rec.close()
	fmt.Fprintf(os.Stderr, "soak: %s mode, %s under load then %s idle, sampling every %s\n", o.mode, o.duration, o.idle, o.every)
	err = soak(ctx, o, procs, rec)
	if perr := rec.plot(filepath.Join(o.out, "rss.svg"), o); perr != nil && err == nil {
		err = perr
	}
	verdict := rec.summary(os.Stdout, o)
	if err != nil {
		return err
	}
	return verdict
}

// startProcesses starts the processes of the mode; the first one serves
// the API, and the sampled ones are returned.
func startProcesses(ctx context.Context, o options, tmp string) ([]*proc, func(), error) {
	var started []*proc
	cleanup := func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].stop()
		}
	}
	o.load.user, o.load.pass = "admin", "soak-password-1"
	devArgs := func(dir string) []string {
		args := []string{"dev", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--temporal-port", "0", "--ui-port", "-1",
			"--admin-password", o.load.pass, "--log-level", "warn"}
		return append(args, strings.Fields(o.devArgs)...)
	}
	switch o.mode {
	case "dev":
		p, err := startProc(ctx, "dev", o.bin, nil, devArgs(filepath.Join(tmp, "dev"))...)
		if err != nil {
			return nil, cleanup, err
		}
		started = append(started, p)
		return started, cleanup, nil
	case "external":
		temporal, err := startProc(ctx, "temporal", o.bin, nil, devArgs(filepath.Join(tmp, "temporal"))...)
		if err != nil {
			return nil, cleanup, err
		}
		started = append(started, temporal)
		dsn := o.databaseURL
		if dsn == "" {
			dsn = "sqlite:" + filepath.Join(tmp, "ontoflow.db")
		}
		env := []string{"DATABASE_URL=" + dsn, "TEMPORAL_ADDRESS=" + temporal.TemporalAddr,
			"ONTOFLOW_TASK_QUEUE=soak", "ONTOFLOW_DATA_DIR=" + filepath.Join(tmp, "serve")}
		if _, err := runOnce(o.bin, "", env, "migrate"); err != nil {
			return nil, cleanup, err
		}
		if _, err := runOnce(o.bin, o.load.pass+"\n", env, "users", "add", "admin", "--password-stdin", "--roles", "admin", "--clearance", "pii"); err != nil {
			return nil, cleanup, err
		}
		serve, err := startProc(ctx, "serve", o.bin, env, "serve", "--http-addr", "127.0.0.1:0", "--log-level", "warn")
		if err != nil {
			return nil, cleanup, err
		}
		started = append(started, serve)
		worker, err := startProc(ctx, "worker", o.bin, env, "worker", "--log-level", "warn", "--metrics-addr", "127.0.0.1:0")
		if err != nil {
			return nil, cleanup, err
		}
		started = append(started, worker)
		return []*proc{serve, worker}, cleanup, nil
	default:
		return nil, cleanup, fmt.Errorf("-mode %q: want dev or external", o.mode)
	}
}

// soak runs the load for o.duration, then idles for o.idle, sampling
// every o.every; it stops at the first failed request or process exit.
func soak(ctx context.Context, o options, procs []*proc, rec *recorder) error {
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loadDone := make(chan struct{})
	go func() { o.load.run(loadCtx); close(loadDone) }()
	start := time.Now()
	tick := time.NewTicker(o.every)
	defer tick.Stop()
	phase := "load"
	take := func() error {
		for _, p := range procs {
			if err, gone := p.exited(); gone {
				return fmt.Errorf("%s exited (%v):\n%s", p.name, err, p.errOut.tail(4096))
			}
		}
		return rec.take(ctx, time.Since(start), phase, o.load)
	}
	if err := take(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-o.load.failed:
			stopLoad()
			<-loadDone
			return fmt.Errorf("request failed after %s: %w", time.Since(start).Round(time.Second), o.load.failErr)
		case <-tick.C:
		}
		el := time.Since(start)
		if phase == "load" && el >= o.duration-time.Second {
			if err := take(); err != nil {
				return err
			}
			stopLoad()
			<-loadDone
			phase = "idle"
			continue
		}
		if err := take(); err != nil {
			return err
		}
		if phase == "idle" && el >= o.duration+o.idle-time.Second {
			return nil
		}
	}
}
