// Command actionbench measures the action engine against a bare Temporal
// workflow on the same embedded server, in one run: it starts the whole dev
// process in-process (app.Start), registers a baseline workflow of four
// no-op regular activities on its own task queue, and prints a Markdown
// table with the ratios issue 5 sets as targets.
//
//	go run ./cmd/actionbench [-seq 100] [-conc 50] [-conc-total 500] [-tput-rounds 3] [-children 1000] [-batch 1000,10000]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/config"
)

const bareQueue = "actionbench-bare"

// tputRounds is the number of alternating throughput rounds.
var tputRounds int

// recordDir, when set, makes the run record workflow histories only.
var recordDir string

// profileDir, when set, receives a CPU profile of each Ontoflow phase.
var profileDir string

// databaseURL, when set, is dev's --database-url.
var databaseURL string

// withWebhook adds the invoke_webhook scenario.
var withWebhook bool

// profiled runs f under a CPU profile named name when -profile is set.
func profiled(name string, f func() error) error {
	if profileDir == "" {
		return f()
	}
	out, err := os.Create(filepath.Join(profileDir, name+".pprof"))
	if err != nil {
		return err
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	// Contention too: where the phase waits when the CPU is not busy.
	runtime.SetMutexProfileFraction(10)
	runtime.SetBlockProfileRate(int(time.Millisecond))
	defer func() {
		runtime.SetMutexProfileFraction(0)
		runtime.SetBlockProfileRate(0)
		for _, kind := range []string{"mutex", "block"} {
			if f, err := os.Create(filepath.Join(profileDir, name+"-"+kind+".pprof")); err == nil {
				_ = pprof.Lookup(kind).WriteTo(f, 0)
				_ = f.Close()
			}
		}
	}()
	// A goroutine snapshot two seconds in shows where work queues.
	t := time.AfterFunc(2*time.Second, func() {
		if g, err := os.Create(filepath.Join(profileDir, name+"-goroutines.txt")); err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(g, 1)
			_ = g.Close()
		}
	})
	defer t.Stop()
	return f()
}

func noop(ctx context.Context) error { return nil }

// bareWorkflow is the baseline: four no-op regular activities.
func bareWorkflow(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	for _, name := range []string{"validate", "authorize", "run", "notify"} {
		if err := workflow.ExecuteActivity(ctx, name).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// bareParent starts n bareWorkflow children, at most 50 at a time.
func bareParent(ctx workflow.Context, n int) error {
	sel := workflow.NewSelector(ctx)
	pending := 0
	for i := 0; i < n || pending > 0; {
		for pending < 50 && i < n {
			f := workflow.ExecuteChildWorkflow(ctx, bareWorkflow)
			sel.AddFuture(f, func(f workflow.Future) { pending-- })
			pending++
			i++
		}
		sel.Select(ctx)
	}
	return nil
}

type bench struct {
	api, user, pass string
	c               client.Client
}

func main() {
	seq := flag.Int("seq", 100, "sequential runs for p50/p95")
	conc := flag.Int("conc", 50, "concurrent clients")
	concTotal := flag.Int("conc-total", 500, "executions in each throughput round")
	flag.IntVar(&tputRounds, "tput-rounds", 3, "throughput rounds (bare and Ontoflow alternate; medians compared)")
	children := flag.Int("children", 1000, "children of the bare parent")
	batches := flag.String("batch", "1000,10000", "batch sizes")
	flag.StringVar(&recordDir, "record", "", "only record the histories of the engine's workflows into this directory (for the replay test) and exit")
	flag.BoolVar(&withWebhook, "webhook", true, "measure an invoke_webhook action against a loopback receiver too")
	flag.BoolVar(&functionsOnly, "functions", false, "only compare a function-backed update (invoke_function) with update_object: p50, throughput and a batch of the first -batch size")
	flag.StringVar(&profileDir, "profile", "", "write CPU profiles of Ontoflow's throughput and batch phases into this directory")
	flag.StringVar(&databaseURL, "database-url", "", "the app database (postgres://...) instead of dev's SQLite file (a database of its own: the run fills it)")
	tracingRounds := flag.Int("tracing-overhead", 0, "only compare sequential executes with tracing off and on (OTLP to a receiver on loopback) in this many alternating rounds of -seq runs")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if *tracingRounds > 0 {
		if err := tracingOverhead(log, *seq, *tracingRounds); err != nil {
			fmt.Fprintln(os.Stderr, "actionbench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(log, *seq, *conc, *concTotal, *children, *batches); err != nil {
		fmt.Fprintln(os.Stderr, "actionbench:", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, seq, conc, concTotal, children int, batchList string) error {
	dir, err := os.MkdirTemp("", "actionbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	cfg, check := config.Bind(fs, config.ModeDev)
	args := []string{"--data-dir", dir, "--http-addr", "127.0.0.1:0", "--temporal-port", "0", "--ui-port", "-1",
		"--admin-password", "bench-password-1", "--log-level", "error",
		// The webhook scenario's receiver listens on loopback.
		"--outbound-allow", "127.0.0.1/32"}
	if databaseURL != "" {
		args = append(args, "--database-url", databaseURL)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	ctx := context.Background()
	a, err := app.Start(ctx, app.Dev, cfg, log)
	if err != nil {
		return fmt.Errorf("start dev: %w", err)
	}
	defer a.Stop(ctx)
	w := worker.New(a.Temporal, bareQueue, worker.Options{})
	w.RegisterWorkflow(bareWorkflow)
	w.RegisterWorkflow(bareParent)
	for _, n := range []string{"validate", "authorize", "run", "notify"} {
		w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: n})
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	b := &bench{api: a.APIURL, user: "admin", pass: "bench-password-1", c: a.Temporal}
	actionID, targets, err := b.setup(max(concTotal+seq, 4))
	if err != nil {
		return err
	}
	if recordDir != "" {
		return b.record(ctx, recordDir, actionID, targets)
	}
	if functionsOnly {
		n, err := strconv.Atoi(strings.TrimSpace(strings.Split(batchList, ",")[0]))
		if err != nil {
			return err
		}
		return functionScenario(ctx, b, actionID, targets, seq, conc, concTotal, n)
	}

	bareRun := func(i int) error {
		r, err := b.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: bareQueue}, bareWorkflow)
		if err != nil {
			return err
		}
		return r.Get(ctx, nil)
	}
	execRun := func(i int) error {
		return b.post("/api/v1/ontology/actions/"+actionID+"/execute",
			map[string]any{"target_object_id": targets[i%len(targets)], "parameters": map[string]any{"priority": i}}, 200, nil)
	}
	directURL, stopDirect, err := serveDirect(a)
	if err != nil {
		return err
	}
	defer stopDirect()
	directRun := func(i int) error {
		return b.postTo(directURL, "/direct/"+actionID+"/execute",
			map[string]any{"target_object_id": targets[i%len(targets)], "parameters": map[string]any{"priority": i}}, 200, nil)
	}
	// Warm every path.
	for i := 0; i < 5; i++ {
		for _, f := range []func(int) error{bareRun, execRun, directRun} {
			if err := f(i); err != nil {
				return err
			}
		}
	}
	counter, err := countStatements(a.DB)
	if err != nil {
		return err
	}
	bareP50, bareP95, err := sequential(seq, bareRun)
	if err != nil {
		return err
	}
	from := counter.mark()
	exP50, exP95, err := sequential(seq, func(i int) error { return execRun(i + concTotal) })
	if err != nil {
		return err
	}
	exCost := counter.per(from, seq)
	from = counter.mark()
	directP50, directP95, err := sequential(seq, func(i int) error { return directRun(i + concTotal) })
	if err != nil {
		return err
	}
	directCost := counter.per(from, seq)
	defer fmt.Printf("\nApp database per sequential execute (%s): Ontoflow %s; direct path %s.\n", a.DB.Dialector.Name(), exCost, directCost)
	// Throughput rounds alternate between the two so that drift over the
	// run (the server's databases grow) affects both alike; the medians
	// are compared.
	var bareTputs, exTputs, directTputs []float64
	for r := 0; r < tputRounds; r++ {
		dt, err := throughput(conc, concTotal, directRun)
		if err != nil {
			return err
		}
		directTputs = append(directTputs, dt)
		t, err := drainedThroughput(ctx, b, conc, concTotal, "bareWorkflow", bareRun)
		if err != nil {
			return err
		}
		bareTputs = append(bareTputs, t)
		err = profiled(fmt.Sprintf("throughput-%d", r), func() (err error) {
			t, err := drainedThroughput(ctx, b, conc, concTotal, "ActionWorkflow", execRun)
			if err != nil {
				return err
			}
			exTputs = append(exTputs, t)
			return nil
		})
		if err != nil {
			return err
		}
	}
	bareTput, exTput, directTput := median(bareTputs), median(exTputs), median(directTputs)
	var hook *webhookFigures
	if withWebhook {
		if hook, err = b.webhook(ctx, seq, conc, concTotal); err != nil {
			return fmt.Errorf("webhook scenario: %w", err)
		}
		defer hook.print(bareP50, bareTput, exP50, exTput, conc)
	}
	if profileDir != "" {
		printSteps(a.Registry)
	}
	// -children 0 skips the bare parent (quicker runs while profiling).
	bareChildren := time.Duration(1)
	if children > 0 {
		start := time.Now()
		r, err := b.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: bareQueue}, bareParent, children)
		if err != nil {
			return err
		}
		if err := r.Get(ctx, nil); err != nil {
			return err
		}
		bareChildren = time.Since(start)
	}

	type batchResult struct {
		n int
		d time.Duration
	}
	var bres []batchResult
	for _, s := range strings.Split(batchList, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		var d time.Duration
		err = profiled(fmt.Sprintf("batch-%d", n), func() (err error) {
			d, err = b.batch(actionID, targets, n)
			return err
		})
		if err != nil {
			return err
		}
		bres = append(bres, batchResult{n, d})
	}

	fmt.Printf("Command: `go run ./cmd/actionbench %s`; %s, nproc %d, %s.\n\n", strings.Join(os.Args[1:], " "), time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), cpuModel())
	fmt.Println("| figure | bare workflow (4 no-op activities) | Ontoflow | ratio | target | met |")
	fmt.Println("|---|---|---|---|---|---|")
	fmt.Printf("| sequential p50 (n=%d) | %s | %s (sync execute over HTTP, update_object) | %.2fx | ≤ 0.35x | %s |\n", seq, ms(bareP50), ms(exP50), ratio(exP50, bareP50), met(ratio(exP50, bareP50) <= 0.35))
	fmt.Printf("| sequential p95 | %s | %s | %.2fx | | |\n", ms(bareP95), ms(exP95), ratio(exP95, bareP95))
	fmt.Printf("| throughput, %d concurrent clients, median of %d rounds of %d runs | %.1f/s | %.1f/s | %.2fx | ≥ 3x | %s |\n", conc, tputRounds, concTotal, bareTput, exTput, exTput/bareTput, met(exTput/bareTput >= 3))
	// After the batch rows: the direct-path table, then the rounds.
	defer fmt.Printf("\nThroughput rounds (alternating): bare %s; Ontoflow %s; direct %s.\n", fmtRates(bareTputs), fmtRates(exTputs), fmtRates(directTputs))
	defer func() {
		fmt.Printf("\nThe price of durability, against the direct path (the same steps from an HTTP handler, no Temporal), same run:\n\n")
		fmt.Println("| figure | direct path | Ontoflow | Ontoflow / direct |")
		fmt.Println("|---|---|---|---|")
		fmt.Printf("| sequential p50 | %s | %s | %.2fx |\n", ms(directP50), ms(exP50), ratio(exP50, directP50))
		fmt.Printf("| sequential p95 | %s | %s | %.2fx |\n", ms(directP95), ms(exP95), ratio(exP95, directP95))
		fmt.Printf("| throughput, %d clients (median) | %.1f/s | %.1f/s | %.2fx |\n\n", conc, directTput, exTput, exTput/directTput)
	}()
	for _, br := range bres {
		target, ok := "", true
		if br.n == children {
			target, ok = "≤ 0.1x", ratio(br.d, bareChildren) <= 0.1
		}
		if br.n >= 10000 {
			target, ok = "≤ 60 s", br.d <= time.Minute
		}
		fmt.Printf("| batch of %d items | parent with %d plain children: %.1f s | %.1f s | %.3fx | %s | %s |\n", br.n, children, bareChildren.Seconds(), br.d.Seconds(), ratio(br.d, bareChildren), target, met(ok))
	}
	return nil
}

// drainedThroughput runs total calls of f on conc clients and returns
// runs per second up to the moment no workflow of workflowType is open any
// more, as the visibility store sees it. Both sides end the same way: a
// synchronous execute answers once the engine has finished the execution,
// a moment before Temporal records the workflow's close, and a bare run's
// Get returns at the close in history, before visibility has it; waiting
// for visibility keeps the server's whole share of either side's work
// inside the measured time.
func drainedThroughput(ctx context.Context, b *bench, conc, total int, workflowType string, f func(i int) error) (float64, error) {
	start := time.Now()
	if _, err := throughput(conc, total, f); err != nil {
		return 0, err
	}
	if err := b.drained(ctx, workflowType); err != nil {
		return 0, err
	}
	return float64(total) / time.Since(start).Seconds(), nil
}

// drained waits until no workflow of workflowType is running.
func (b *bench) drained(ctx context.Context, workflowType string) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := b.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: "default", Query: fmt.Sprintf(`WorkflowType = %q AND ExecutionStatus = "Running"`, workflowType),
		})
		if err != nil {
			return err
		}
		if resp.GetCount() == 0 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s workflows still running after 5 minutes", workflowType)
}

// printSteps prints the engine's mean step latencies (with -profile).
func printSteps(reg prometheus.Gatherer) {
	mfs, err := reg.Gather()
	if err != nil {
		return
	}
	for _, mf := range mfs {
		if mf.GetName() != "ontoflow_action_step_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			fmt.Fprintf(os.Stderr, "STEP %s: n=%d avg %.2f ms\n", m.GetLabel()[0].GetValue(), h.GetSampleCount(), h.GetSampleSum()/float64(h.GetSampleCount())*1000)
		}
	}
}

func fmtRates(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.1f/s", x)
	}
	return strings.Join(parts, ", ")
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// ms formats a duration for the tables.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// met says whether a target holds, bold when it does not.
func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			return strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
		}
	}
	return "unknown CPU"
}

func sequential(n int, f func(i int) error) (p50, p95 time.Duration, err error) {
	ds := make([]time.Duration, n)
	for i := range ds {
		t := time.Now()
		if err := f(i); err != nil {
			return 0, 0, err
		}
		ds[i] = time.Since(t)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[n/2], ds[n*95/100], nil
}

func throughput(workers, total int, f func(i int) error) (float64, error) {
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, workers)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < total; i++ {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			return 0, err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(total) / time.Since(start).Seconds(), nil
}

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}, Timeout: 10 * time.Minute}

func (b *bench) post(path string, body any, want int, out any) error {
	return b.postTo(b.api, path, body, want, out)
}

func (b *bench) postTo(base, path string, body any, want int, out any) error {
	js, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+path, bytes.NewReader(js))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(b.user, b.pass)
	return b.do(req, want, out)
}

func (b *bench) do(req *http.Request, want int, out any) error {
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %.300s", req.Method, req.URL.Path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// setup creates an object type, n target objects and an update_object
// action.
func (b *bench) setup(n int) (string, []string, error) {
	if err := b.post("/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}, {"name": "priority", "type": "integer"}}}, 201, nil); err != nil {
		return "", nil, err
	}
	var a struct {
		ID string `json:"id"`
	}
	if err := b.post("/api/v1/ontology/actions", map[string]any{"name": "set-priority", "object_type_id": "Ticket", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "priority", "type": "integer", "required": true}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "priority", "input": "priority"}}}}}, 201, &a); err != nil {
		return "", nil, err
	}
	ids := make([]string, n)
	for i := range ids {
		var o struct {
			ID string `json:"id"`
		}
		if err := b.post("/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{"title": fmt.Sprintf("t%d", i)}}, 201, &o); err != nil {
			return "", nil, err
		}
		ids[i] = o.ID
	}
	return a.ID, ids, nil
}

// batch submits an n-item batch asynchronously and polls it to the end.
func (b *bench) batch(actionID string, targets []string, n int) (time.Duration, error) {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"target_object_id": targets[i%len(targets)], "parameters": map[string]any{"priority": i}}
	}
	start := time.Now()
	var acc struct {
		ID string `json:"id"`
	}
	if err := b.post("/api/v1/ontology/actions/"+actionID+"/execute-batch?async=true", map[string]any{"items": items}, 202, &acc); err != nil {
		return 0, err
	}
	for {
		req, _ := http.NewRequest("GET", b.api+"/api/v1/ontology/executions/"+acc.ID, nil)
		req.SetBasicAuth(b.user, b.pass)
		var ex struct {
			Status     string  `json:"status"`
			FinishedAt *string `json:"finished_at"`
			Totals     struct {
				Succeeded, Failed int
			} `json:"totals"`
		}
		if err := b.do(req, 200, &ex); err != nil {
			return 0, err
		}
		if ex.FinishedAt != nil {
			if ex.Totals.Succeeded != n {
				return 0, fmt.Errorf("batch of %d: %d succeeded, %d failed", n, ex.Totals.Succeeded, ex.Totals.Failed)
			}
			return time.Since(start), nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}
