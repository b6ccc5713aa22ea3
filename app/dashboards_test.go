package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// dashboardsDir holds the Grafana dashboards docker-compose provisions.
const dashboardsDir = "../deploy/grafana/dashboards"

// TestDashboardsQueryExportedSeries runs a short day on a dev stack (an
// execute with an in-app notification and its revert, a webhook to a
// receiver on loopback, a batch, a failing function, a WebDAV upload) and
// scrapes its /metrics on --metrics-addr: every metric a dashboard panel
// queries must be among the series the process exports (issue 31).
func TestDashboardsQueryExportedSeries(t *testing.T) {
	queries := dashboardQueries(t)
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			more := []string{"--outbound-allow", "127.0.0.1/32", "--metrics-addr", "127.0.0.1:0"}
			if d == "postgres" {
				more = append(more, "--database-url", testdb.DSN(t, d))
			}
			a, c := startDevApp(t, more)
			shortRun(t, c)
			exported := scrape(t, a.MetricsURL)
			var missing []string
			for name, where := range queries {
				if !exported[name] && !exported[histogramBase(name)] {
					missing = append(missing, name+" (queried by "+where+")")
				}
			}
			sort.Strings(missing)
			for _, m := range missing {
				t.Errorf("no process exports %s", m)
			}
		})
	}
}

// shortRun is the traffic the dashboards are checked against.
func shortRun(t *testing.T, c devClient) {
	t.Helper()
	rx := newReceiver(t)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}, {"name": "notes", "type": "string"}}}, nil)
	var obj, setNotes, hook, fn struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{"title": "t1"}}, &obj)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "set-notes", "object_type_id": "Ticket",
		"operation_kind": "update_object", "inputs": []map[string]any{{"name": "notes", "type": "string"}},
		"config": map[string]any{
			"operation":                 map[string]any{"property_mappings": []map[string]any{{"property": "notes", "input": "notes"}}},
			"notification_side_effects": []map[string]any{{"title": "notes set", "channels": []string{"in_app"}, "send_to_actor": true}}}}, &setNotes)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "sync", "object_type_id": "Ticket",
		"operation_kind": "invoke_webhook", "config": map[string]any{"operation": map[string]any{"url": rx.srv.URL + "/sync"}}}, &hook)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "broken", "object_type_id": "Ticket",
		"operation_kind": "invoke_function", "config": map[string]any{"operation": inline("javascript",
			`export default function () { throw new Error("no"); }`)}}, &fn)

	var ex struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	base := "/api/v1/ontology/actions/"
	c.must(http.StatusOK, "POST", base+setNotes.ID+"/execute", map[string]any{"target_object_id": obj.ID,
		"parameters": map[string]any{"notes": "a"}}, &ex)
	c.must(http.StatusOK, "POST", "/api/v1/ontology/executions/"+ex.ID+"/revert", map[string]any{"justification": "watching"}, nil)
	c.must(http.StatusOK, "POST", base+hook.ID+"/execute", map[string]any{"target_object_id": obj.ID}, &ex)
	if ex.Status != "succeeded" || len(rx.seenAt("/sync")) != 1 {
		t.Fatalf("webhook execute: %+v, %d calls", ex, len(rx.seenAt("/sync")))
	}
	if st, body := c.do("POST", base+fn.ID+"/execute", map[string]any{"target_object_id": obj.ID}); st < 400 {
		t.Fatalf("a throwing function answered %d %s", st, body)
	}
	items := []map[string]any{{"target_object_id": obj.ID, "parameters": map[string]any{"notes": "b"}},
		{"target_object_id": obj.ID, "parameters": map[string]any{"notes": "c"}}}
	c.must(http.StatusOK, "POST", base+setNotes.ID+"/execute-batch", map[string]any{"items": items}, nil)
	c.must(http.StatusCreated, "PUT", "/webdav/watched.txt", "seen", nil)
}

// scrape reads url's metric names (the names of samples, so a histogram
// gives its _bucket, _sum and _count), waiting for the Temporal SDK's
// metrics, which are reported once a second.
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	if url == "" {
		t.Fatal("dev serves no metrics on --metrics-addr")
	}
	names := map[string]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("scrape %s: %v", url, err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if l == "" || l[0] == '#' {
				continue
			}
			if i := strings.IndexAny(l, "{ "); i > 0 {
				names[l[:i]] = true
			}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if names["temporal_activity_execution_latency_seconds_bucket"] || time.Now().After(deadline) {
			return names
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// histogramBase maps a histogram's sample name to the family's name.
func histogramBase(name string) string {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if strings.HasSuffix(name, s) {
			return strings.TrimSuffix(name, s)
		}
	}
	return name
}

// dashboardQueries are the metric names the dashboards' panels query,
// each with a panel that queries it.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dashboardsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s: %v", dashboardsDir, err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			UID    string           `json:"uid"`
			Title  string           `json:"title"`
			Panels []dashboardPanel `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Fatalf("%s: no uid, title or panels", f)
		}
		for _, p := range d.Panels {
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q queries nothing", f, p.Title)
			}
			for _, q := range p.Targets {
				names := metricNames(q.Expr)
				if len(names) == 0 {
					t.Errorf("%s: panel %q: no metric in %q", f, p.Title, q.Expr)
				}
				for _, n := range names {
					out[n] = filepath.Base(f) + ": " + p.Title
				}
			}
		}
	}
	return out
}

type dashboardPanel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

var (
	promStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promGroupings = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdents    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(?:\s*\()?`)
	promKeywords  = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
		"group_right": true, "bool": true, "offset": true, "and": true, "or": true, "unless": true, "inf": true, "nan": true}
)

// metricNames parses the metric names out of a PromQL expression: what is
// left once strings, label matchers, ranges and groupings are dropped,
// that is no function call, keyword or number.
func metricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRanges.ReplaceAllString(s, " ")
	s = promGroupings.ReplaceAllString(s, " ")
	s = strings.ReplaceAll(s, "$", " ")
	var out []string
	for _, id := range promIdents.FindAllString(s, -1) {
		if strings.HasSuffix(id, "(") || promKeywords[strings.ToLower(id)] {
			continue
		}
		out = append(out, id)
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`sum by (action_type, status) (rate(ontoflow_action_executions_total{kind!="what-if"}[$__rate_interval]))`: "ontoflow_action_executions_total",
		`histogram_quantile(0.95, sum by (le, step) (rate(ontoflow_action_step_duration_seconds_bucket[5m])))`:     "ontoflow_action_step_duration_seconds_bucket",
		`topk(10, sum by (code) (increase(ontoflow_action_failures_total[$__range])))`:                             "ontoflow_action_failures_total",
		`go_sql_in_use_connections / go_sql_max_open_connections`:                                                  "go_sql_in_use_connections go_sql_max_open_connections",
		`sum(rate(a_total{x="b or c"}[1m])) / ignoring (y) sum(rate(b_total[1m])) > 0.5`:                           "a_total b_total",
	} {
		if got := strings.Join(metricNames(expr), " "); got != want {
			t.Errorf("metricNames(%s) = %q, want %q", expr, got, want)
		}
	}
}

// TestComposeScrapesEveryProcess: docker-compose.yml runs Prometheus and
// Grafana on the files in deploy/, Prometheus scrapes serve and worker on
// the ports they listen on, and every dashboard panel reads the data
// source Grafana is provisioned with.
func TestComposeScrapesEveryProcess(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
		} `yaml:"services"`
	}
	readYAML(t, "../docker-compose.yml", &compose)
	for _, name := range []string{"prometheus", "grafana", "ontoflow-serve", "ontoflow-worker"} {
		if _, ok := compose.Services[name]; !ok {
			t.Fatalf("docker-compose.yml has no service %s", name)
		}
	}
	for name, s := range compose.Services {
		for _, v := range s.Volumes {
			if host, _, ok := strings.Cut(v, ":"); ok && strings.HasPrefix(host, "./") {
				if _, err := os.Stat(filepath.Join("..", host)); err != nil {
					t.Errorf("%s mounts %s: %v", name, host, err)
				}
			}
		}
	}
	var prom struct {
		ScrapeConfigs []struct {
			JobName      string `yaml:"job_name"`
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "../deploy/prometheus/prometheus.yml", &prom)
	ports := map[string]string{}
	for _, j := range prom.ScrapeConfigs {
		for _, d := range j.DNSSDConfigs {
			for _, n := range d.Names {
				ports[n] = fmt.Sprint(d.Port)
			}
		}
	}
	serveAddr := ""
	for i, a := range compose.Services["ontoflow-serve"].Command {
		if a == "--http-addr" && i+1 < len(compose.Services["ontoflow-serve"].Command) {
			serveAddr = compose.Services["ontoflow-serve"].Command[i+1]
		}
	}
	for svc, addr := range map[string]string{"ontoflow-serve": serveAddr,
		"ontoflow-worker": compose.Services["ontoflow-worker"].Environment["ONTOFLOW_METRICS_ADDR"]} {
		_, port, err := net.SplitHostPort(addr)
		if err != nil || ports[svc] != port {
			t.Errorf("%s listens on %q, Prometheus scrapes port %q", svc, addr, ports[svc])
		}
	}
	var ds struct {
		Datasources []struct {
			UID, Type, URL string
		} `yaml:"datasources"`
	}
	readYAML(t, "../deploy/grafana/provisioning/datasources/prometheus.yml", &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" {
		t.Fatalf("data sources %+v", ds.Datasources)
	}
	files, _ := filepath.Glob(filepath.Join(dashboardsDir, "*.json"))
	panels := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var d struct {
			Panels []struct {
				Title, Type string
				Datasource  struct{ UID string }
			}
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, p := range d.Panels {
			if p.Type == "row" {
				continue
			}
			panels++
			if p.Datasource.UID != ds.Datasources[0].UID {
				t.Errorf("%s: panel %q reads data source %q, Grafana has %q", f, p.Title, p.Datasource.UID, ds.Datasources[0].UID)
			}
		}
	}
	if panels == 0 {
		t.Errorf("no panels in %s", dashboardsDir)
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
