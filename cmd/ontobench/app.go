package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/config"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// The -app phase measures what only a running process shows (issue 27
// item 7): the execute-batch load rate of a create_object action, an
// update_object execute through the engine, ctx.ontology.query from
// inside a function's run, listing 1,000 links of one object over the
// REST API, and the process's RSS. It starts the whole dev process
// in-process (app.Start, as cmd/actionbench does) and talks HTTP to it.

const appPassword = "bench-password-1"

// appBench is the in-process app being measured.
type appBench struct {
	a   *app.App
	r   *rand.Rand
	ids []string
}

// runApp creates n objects by execute-batch into dsn ("" a new SQLite
// file; a database already holding the Item objects of a plain run is
// kept and added to) and times the process-level shapes runs times each.
func runApp(ctx context.Context, dsn string, n, runs int) error {
	dir, err := os.MkdirTemp("", "ontobench-app")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	args := []string{"--data-dir", dir, "--http-addr", "127.0.0.1:0", "--temporal-port", "0", "--ui-port", "-1",
		"--admin-password", appPassword, "--log-level", "error"}
	if dsn != "" {
		args = append(args, "--database-url", dsn)
	}
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	cfg, check := config.Bind(fs, config.ModeDev)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	a, err := app.Start(ctx, app.Dev, cfg, log)
	if err != nil {
		return fmt.Errorf("start dev: %w", err)
	}
	defer a.Stop(ctx)
	b := &appBench{a: a, r: rand.New(rand.NewSource(27))}
	fmt.Printf("In-process app (`app.Start`, dev mode), dialect %s, %d runs per shape after 3 warm-ups; p50 / p95 in ms; %s; load average at start: %s.\n\n",
		models.Dialect(a.DB), runs, time.Now().UTC().Format(time.RFC3339), loadAvg())
	if err := b.setupTypes(); err != nil {
		return err
	}
	before, err := b.count(ctx)
	if err != nil {
		return err
	}
	d, err := b.load(n, before)
	if err != nil {
		return err
	}
	rate := float64(n) / d.Seconds()
	fmt.Printf("| figure | value |\n|---|---|\n")
	batches := (n + defaults.BatchMaxItems - 1) / defaults.BatchMaxItems
	if n >= 1_000_000 {
		fmt.Printf("| execute-batch load (create_object, %d items in %d batches one after another, async, until finished) | %.1f min, **%.0f objects/s** |\n",
			n, batches, d.Minutes(), rate)
	} else {
		fmt.Printf("| execute-batch load (create_object, %d items in %d batches one after another, async, until finished) | %.1f s, **%.0f objects/s**; 1,000,000 extrapolated (not measured): %.0f min |\n",
			n, batches, d.Seconds(), rate, 1e6/rate/60)
	}
	total, err := b.count(ctx)
	if err != nil {
		return err
	}
	if err := b.pickIDs(ctx); err != nil {
		return err
	}
	fmt.Printf("| objects of the type during the shapes below | %d |\n", total)
	return b.shapes(ctx, runs)
}

func (b *appBench) setupTypes() error {
	var sp map[string]any
	if err := json.Unmarshal([]byte(benchType), &sp); err != nil {
		return err
	}
	// 409: a plain run already created the type (the -app-db of its database).
	if err := b.post("/api/v1/ontology/types", sp, 0, nil); err != nil && !strings.Contains(err.Error(), ": 409 ") {
		return err
	}
	in := func(name, typ string) map[string]any { return map[string]any{"name": name, "type": typ} }
	m := func(names ...string) []map[string]any {
		var out []map[string]any
		for _, p := range names {
			out = append(out, map[string]any{"property": p, "input": p})
		}
		return out
	}
	actions := []map[string]any{
		{"name": "bench-create-item", "object_type_id": "Item", "operation_kind": "create_object",
			"inputs": []map[string]any{{"name": "key", "type": "string", "required": true}, in("n", "integer"), in("tag", "string"), in("at", "timestamp"),
				in("score", "double"), in("flag", "boolean"), in("note", "string")},
			"config": map[string]any{"operation": map[string]any{"property_mappings": m("key", "n", "tag", "at", "score", "flag", "note")}}},
		{"name": "bench-set-n", "object_type_id": "Item", "operation_kind": "update_object",
			"inputs": []map[string]any{{"name": "n", "type": "integer", "required": true}},
			"config": map[string]any{"operation": map[string]any{"property_mappings": m("n")}}},
		{"name": "bench-fn-query", "object_type_id": "Item", "operation_kind": "invoke_function",
			"inputs": []map[string]any{in("tag", "string")},
			"config": map[string]any{"operation": map[string]any{"inline": map[string]any{"runtime": "javascript", "source": fnQuery}}}},
		{"name": "bench-fn-plain", "object_type_id": "Item", "operation_kind": "invoke_function",
			"inputs": []map[string]any{in("tag", "string")},
			"config": map[string]any{"operation": map[string]any{"inline": map[string]any{"runtime": "javascript", "source": fnPlain}}}},
	}
	for _, ac := range actions {
		if err := b.post("/api/v1/ontology/actions", ac, 0, nil); err != nil && !strings.Contains(err.Error(), ": 409 ") {
			return err
		}
	}
	lt := map[string]any{"name": "bench-related", "source_object_type_id": "Item", "target_object_type_id": "Item", "cardinality": "many_to_many"}
	if err := b.post("/api/v1/ontology/link-types", lt, 0, nil); err != nil && !strings.Contains(err.Error(), ": 409 ") {
		return err
	}
	return nil
}

// fnQuery runs ten queries of 1% (100 objects each) and times them with
// the runtime's own clock: the query as a function sees it; fnPlain is
// the same function without them.
const fnQuery = `export default function (ctx) {
  const t0 = Date.now();
  let found = 0;
  for (let i = 0; i < 10; i++) {
    found += ctx.ontology.query("Item", { tag: "t" + String((Number(ctx.parameters.tag.slice(1)) + i) % 100).padStart(2, "0") }, 100).length;
  }
  const ms = (Date.now() - t0) / 10;
  return { edits: [{ type: "update", object_id: ctx.target.id, properties: { n: found } }], result: { ms: ms, found: found } };
}`

const fnPlain = `export default function (ctx) {
  const r = [];
  return { edits: [{ type: "update", object_id: ctx.target.id, properties: { n: r.length } }], result: { found: r.length } };
}`

func (b *appBench) count(ctx context.Context) (int64, error) {
	var n int64
	err := b.a.DB.WithContext(ctx).Raw("SELECT COUNT(*) FROM objects o JOIN object_types t ON t.id = o.object_type_id WHERE t.name = 'Item'").Scan(&n).Error
	return n, err
}

// pickIDs takes 2,000 random objects of the type as targets.
func (b *appBench) pickIDs(ctx context.Context) error {
	return b.a.DB.WithContext(ctx).Raw("SELECT o.id FROM objects o JOIN object_types t ON t.id = o.object_type_id WHERE t.name = 'Item' ORDER BY random() LIMIT 2000").Scan(&b.ids).Error
}

// load creates n objects by async execute-batches of at most
// defaults.BatchMaxItems, one after another (a batch's largest size), and
// prints each batch's rate to stderr: a load of a million objects runs
// for an hour and its progress shows whether the rate falls as the type
// grows.
func (b *appBench) load(n int, from int64) (time.Duration, error) {
	t0 := time.Now()
	for done := 0; done < n; {
		m := min(defaults.BatchMaxItems, n-done)
		d, err := b.loadBatch(m, from+int64(done))
		if err != nil {
			return 0, fmt.Errorf("batch at item %d: %w", done, err)
		}
		done += m
		fmt.Fprintf(os.Stderr, "ontobench: %s %d of %d objects created, this batch %.0f objects/s, load %s\n",
			time.Now().UTC().Format(time.TimeOnly), done, n, float64(m)/d.Seconds(), loadAvg())
	}
	return time.Since(t0), nil
}

// loadBatch creates n objects by one async execute-batch and waits for
// the execution to finish; keys start after the from objects present.
func (b *appBench) loadBatch(n int, from int64) (time.Duration, error) {
	items := make([]map[string]any, n)
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for j := range items {
		i := int(from) + j
		items[j] = map[string]any{"parameters": map[string]any{"key": fmt.Sprintf("b%07d", i), "n": i, "tag": fmt.Sprintf("t%02d", i%100),
			"at": start.Add(time.Duration(i) * time.Second).Format(time.RFC3339), "score": float64(i%1000) / 7, "flag": i%2 == 0,
			"note": fmt.Sprintf("%s %s %s-%06d", words[i%10], words[(i/10)%10], words[(i/100)%10], i%997)}}
	}
	t0 := time.Now()
	var acc struct {
		ID string `json:"id"`
	}
	if err := b.post("/api/v1/ontology/actions/bench-create-item/execute-batch?async=true", map[string]any{"items": items}, 202, &acc); err != nil {
		return 0, err
	}
	for {
		var ex struct {
			FinishedAt *string `json:"finished_at"`
			Totals     struct {
				Succeeded, Failed int
			} `json:"totals"`
		}
		if err := b.get("/api/v1/ontology/executions/"+acc.ID, &ex); err != nil {
			return 0, err
		}
		if ex.FinishedAt != nil {
			if ex.Totals.Succeeded != n {
				return 0, fmt.Errorf("batch of %d: %d succeeded, %d failed", n, ex.Totals.Succeeded, ex.Totals.Failed)
			}
			return time.Since(t0), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *appBench) target() string { return b.ids[b.r.Intn(len(b.ids))] }

func (b *appBench) execute(action string, params map[string]any) error {
	return b.executeOut(action, params, nil)
}

func (b *appBench) executeOut(action string, params map[string]any, out any) error {
	return b.post("/api/v1/ontology/actions/"+action+"/execute", map[string]any{"target_object_id": b.target(), "parameters": params}, 200, out)
}

func (b *appBench) shapes(ctx context.Context, runs int) error {
	src := b.ids[0]
	for _, t := range b.ids[1:1001] {
		if _, err := b.a.Store.CreateLink(ctx, nil, "bench-related", src, t); err != nil {
			return fmt.Errorf("create links: %w", err)
		}
	}
	links := func() error {
		n, tok := 0, ""
		for {
			var p struct {
				Data          []json.RawMessage `json:"data"`
				NextPageToken string            `json:"next_page_token"`
			}
			path := "/api/v1/ontology/types/Item/objects/" + src + "/links?page_size=500"
			if tok != "" {
				path += "&page_token=" + tok
			}
			if err := b.get(path, &p); err != nil {
				return err
			}
			n += len(p.Data)
			if tok = p.NextPageToken; tok == "" {
				break
			}
		}
		if n != 1000 {
			return fmt.Errorf("listed %d links, want 1000", n)
		}
		return nil
	}
	storeLinks := func() error {
		ls, err := b.a.Store.ObjectLinks(ctx, b.admin(ctx), "Item", src, ontologyLinkQuery(1000))
		if err == nil && len(ls) != 1000 {
			err = fmt.Errorf("store listed %d links, want 1000", len(ls))
		}
		return err
	}
	update := func() error { return b.execute("bench-set-n", map[string]any{"n": b.r.Intn(1000000)}) }
	var inRun []float64
	fq := func() error {
		var ex struct {
			Op struct {
				Result struct {
					MS    *float64 `json:"ms"`
					Found int      `json:"found"`
				} `json:"result"`
			} `json:"operation_result"`
		}
		if err := b.executeOut("bench-fn-query", map[string]any{"tag": fmt.Sprintf("t%02d", b.r.Intn(100))}, &ex); err != nil {
			return err
		}
		if r := ex.Op.Result; r.MS == nil || r.Found == 0 {
			return fmt.Errorf("function result without its timing or without objects (%d)", r.Found)
		}
		inRun = append(inRun, *ex.Op.Result.MS)
		return nil
	}
	fp := func() error {
		return b.execute("bench-fn-plain", map[string]any{"tag": fmt.Sprintf("t%02d", b.r.Intn(100))})
	}
	rows := []struct {
		name string
		fn   func() error
	}{
		{"listing 1,000 links of one object (REST, 2 pages of 500)", links},
		{"listing 1,000 links of one object (store.ObjectLinks, limit 1,000)", storeLinks},
		{"update_object execute on a random object (sync, HTTP)", update},
	}
	if err := profileShape("ONTOBENCH_LINKS_PROFILE", links); err != nil {
		return err
	}
	if err := profileShape("ONTOBENCH_UPDATE_PROFILE", update); err != nil {
		return err
	}
	for _, r := range rows {
		p50, p95, err := timeIt(runs, r.fn)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		fmt.Printf("| %s | %.2f / %.2f |\n", r.name, p50, p95)
	}
	// The two functions alternate so the machine's load falls on both.
	var qs, ps []float64
	for i := 0; i < runs+3; i++ {
		for _, c := range []struct {
			f   func() error
			out *[]float64
		}{{fq, &qs}, {fp, &ps}} {
			t0 := time.Now()
			if err := c.f(); err != nil {
				return fmt.Errorf("function execute: %w", err)
			}
			if i >= 3 {
				*c.out = append(*c.out, msSince(t0))
			}
		}
	}
	q50, q95 := pct(qs)
	p50, p95 := pct(ps)
	r50, r95 := pct(inRun[3:])
	fmt.Printf("| ctx.ontology.query (1%%, first 100) timed inside the function's run (Date.now around 10 calls, per call) | %.2f / %.2f |\n", r50, r95)
	fmt.Printf("| invoke_function execute making those 10 queries (sync, HTTP) | %.2f / %.2f |\n", q50, q95)
	fmt.Printf("| the same function without the queries (alternating) | %.2f / %.2f |\n", p50, p95)
	fmt.Printf("| process RSS after the shapes (VmRSS / VmHWM) | %s |\n", rss())
	fmt.Printf("\nLoad average at the end: %s.\n", loadAvg())
	return nil
}

func timeIt(runs int, f func() error) (float64, float64, error) {
	var ds []float64
	for i := 0; i < runs+3; i++ {
		t0 := time.Now()
		if err := f(); err != nil {
			return 0, 0, err
		}
		if i >= 3 {
			ds = append(ds, msSince(t0))
		}
	}
	p50, p95 := pct(ds)
	return p50, p95, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func pct(ds []float64) (float64, float64) {
	sort.Float64s(ds)
	return ds[len(ds)/2], ds[len(ds)*95/100]
}

// rss is this process's resident set now and at its peak, from /proc.
func rss() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	var cur, peak string
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			cur = kib(v)
		}
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			peak = kib(v)
		}
	}
	return cur + " / " + peak
}

func kib(v string) string {
	n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
	return fmt.Sprintf("%.0f MiB", float64(n)/1024)
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

var appClient = &http.Client{Timeout: 10 * time.Minute}

// post sends body; want 0 accepts any 2xx.
func (b *appBench) post(path string, body any, want int, out any) error {
	js, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", b.a.APIURL+path, bytes.NewReader(js))
	req.Header.Set("Content-Type", "application/json")
	return b.do(req, want, out)
}

func (b *appBench) get(path string, out any) error {
	req, _ := http.NewRequest("GET", b.a.APIURL+path, nil)
	return b.do(req, 200, out)
}

func (b *appBench) do(req *http.Request, want int, out any) error {
	req.SetBasicAuth("admin", appPassword)
	resp, err := appClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if (want != 0 && resp.StatusCode != want) || (want == 0 && resp.StatusCode/100 != 2) {
		return fmt.Errorf("%s %s: %d %.300s", req.Method, req.URL.Path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// admin is the dev process's admin user (store calls read as it).
func (b *appBench) admin(ctx context.Context) *models.User {
	var u models.User
	if err := b.a.DB.WithContext(ctx).Take(&u, "username = ?", "admin").Error; err != nil {
		return nil
	}
	return &u
}

func ontologyLinkQuery(limit int) ontology.LinkQuery { return ontology.LinkQuery{Limit: limit} }

// profileShape writes a CPU profile of 200 runs of a shape (the REST
// listing of links, the update_object execute) to the file the
// environment variable env names, if it names one.
func profileShape(env string, shape func() error) error {
	path := os.Getenv(env)
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", env, err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("%s: %w", env, err)
	}
	defer pprof.StopCPUProfile()
	for i := 0; i < 200; i++ {
		if err := shape(); err != nil {
			return err
		}
	}
	return nil
}
