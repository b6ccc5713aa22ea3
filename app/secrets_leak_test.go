package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/proto"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/internal/harness/devtest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// syncBuffer is a log sink safe for the process's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSecretValuesNeverLeak runs webhook actions whose URL, headers and
// signature use secrets, and a Slack notification whose destination is
// one, with debug logging, then looks for the secrets' values everywhere
// a run leaves data: every event of the workflows' Temporal histories,
// every file of the data directory (Ontoflow's database and the embedded
// Temporal server's, with their write-ahead logs), the log output and the
// API's answers; on Postgres also every row of every table of Ontoflow's
// schema. The values are found nowhere (the receivers got them, which
// shows they were used).
func TestSecretValuesNeverLeak(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := ""
			if d == "postgres" {
				dsn = testdb.DSN(t, d)
			}
			leakSuite(t, dsn)
		})
	}
}

func leakSuite(t *testing.T, dsn string) {
	rx := newReceiver(t)
	dir := t.TempDir()
	logs := &syncBuffer{}
	a := startWithLog(t, dir, dsn, logs)
	c := devClient{t: t, base: a.APIURL}

	values := map[string]string{
		"LEAK_TOKEN":   "tok-9d1e77c0a3f54b2e8c61",
		"LEAK_PATH":    "path-51c0d6e2b9f84a7d",
		"LEAK_SIGNING": "whsec_" + base64.StdEncoding.EncodeToString([]byte("leak-test-signing-key-32-bytes!!")),
		"LEAK_SLACK":   rx.srv.URL + "/slack/leak-4be2c9a1f07d",
		"LEAK_TEAMS":   rx.srv.URL + "/teams/leak-7c3e0d95ab21",
	}
	for name, v := range values {
		policy := map[string]any{"name": name, "value": v, "destinations": []string{rx.srv.URL + "/hook/"}}
		if ch, ok := map[string]string{"LEAK_SLACK": "slack", "LEAK_TEAMS": "teams"}[name]; ok {
			policy["channel"], policy["destinations"] = ch, []string{rx.srv.URL + "/" + ch + "/"}
		}
		c.must(http.StatusCreated, "POST", "/api/v1/secrets", policy, nil)
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}, {"name": "notes", "type": "string"}}}, nil)
	var obj, act idOnly
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{"title": "t"}}, &obj)
	rx.script("/hook/"+values["LEAK_PATH"], status(500), jsonAnswer(`{"echo":"ok"}`))
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "leaky", "object_type_id": "Ticket",
		"operation_kind": "invoke_webhook", "config": map[string]any{
			"operation": map[string]any{"url": rx.srv.URL + "/hook/{{ secrets.LEAK_PATH }}", "max_attempts": 2,
				"headers":        map[string]string{"Authorization": "Bearer {{ secrets.LEAK_TOKEN }}"},
				"signing_secret": "{{ secrets.LEAK_SIGNING }}"},
			"notification_side_effects": []map[string]any{{"title": "done", "channels": []string{"slack", "teams"},
				"send_to_actor": true, "slack_webhook": "{{ secrets.LEAK_SLACK }}", "teams_webhook": "{{ secrets.LEAK_TEAMS }}"}}}}, &act)

	var ex map[string]any
	c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+act.ID+"/execute", map[string]any{"target_object_id": obj.ID}, &ex)
	c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+act.ID+"/validate", map[string]any{"target_object_id": obj.ID}, nil)
	waitNotified(t, c, ex)
	if got := rx.seenAt("/hook/" + values["LEAK_PATH"]); len(got) != 2 || got[0].Header.Get("Authorization") != "Bearer "+values["LEAK_TOKEN"] {
		t.Fatalf("the receiver did not get the secrets: %d requests", len(got))
	}
	if len(rx.seenAt("/slack/leak-4be2c9a1f07d")) != 1 || len(rx.seenAt("/teams/leak-7c3e0d95ab21")) != 1 {
		t.Fatal("the Slack or Teams destination got no post")
	}

	var answers bytes.Buffer
	for _, p := range []string{"/api/v1/ontology/executions/" + ex["id"].(string), "/api/v1/ontology/actions/" + act.ID,
		"/api/v1/ontology/executions", "/api/v1/secrets", "/metrics"} {
		_, b := c.do("GET", p, nil)
		answers.Write(b)
	}
	history := histories(t, a)
	a.Stop(context.Background()) // flush the databases to their files
	files := dataFiles(t, dir)
	if dsn != "" {
		files["postgres"] = tableDump(t, dsn)
	}
	for name, v := range values {
		for where, data := range map[string][]byte{"the Temporal histories": history, "the log": []byte(logs.String()),
			"the API's answers": answers.Bytes()} {
			if bytes.Contains(data, []byte(v)) {
				t.Errorf("%s holds the value of %s", where, name)
			}
		}
		for path, data := range files {
			if bytes.Contains(data, []byte(v)) {
				t.Errorf("%s holds the value of %s", path, name)
			}
		}
	}
	// The scan does read the database: the action type's reference is there.
	found := false
	for _, data := range files {
		found = found || bytes.Contains(data, []byte("Bearer {{ secrets.LEAK_TOKEN }}"))
	}
	if !found {
		t.Error("the data files do not hold the stored action type: the scan reads the wrong files")
	}
	if len(history) == 0 || len(files) == 0 || !strings.Contains(logs.String(), "level=DEBUG") {
		t.Errorf("nothing was scanned: %d history bytes, %d files, %d log bytes", len(history), len(files), len(logs.String()))
	}
}

// startWithLog starts dev in dir (and on the Postgres database dsn, when
// set) with debug logging into w.
func startWithLog(t *testing.T, dir, dsn string, w *syncBuffer) *app.App {
	t.Helper()
	args := []string{"--data-dir", dir, "--log-level", "debug", "--outbound-allow", "127.0.0.1/32"}
	if dsn != "" {
		args = append(args, "--database-url", dsn)
	}
	return devtest.Start(t, adminPassword, args, slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

// tableDump is every row of every table in dsn's schema, as text.
func tableDump(t *testing.T, dsn string) []byte {
	t.Helper()
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer sqlDB.Close()
	}
	var tables []string
	if err := db.Raw("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()").Scan(&tables).Error; err != nil || len(tables) == 0 {
		t.Fatalf("list tables: %v (%d)", err, len(tables))
	}
	var out bytes.Buffer
	for _, tb := range tables {
		var rows []string
		if err := db.Raw(`SELECT t::text FROM "` + tb + `" t`).Scan(&rows).Error; err != nil {
			t.Fatalf("dump %s: %v", tb, err)
		}
		out.WriteString(strings.Join(rows, "\n"))
	}
	return out.Bytes()
}

// histories returns every event of every workflow in the namespace,
// protobuf-encoded (payloads hold their bytes as they are).
func histories(t *testing.T, a *app.App) []byte {
	t.Helper()
	ctx := context.Background()
	var out []byte
	list, err := a.Temporal.ListWorkflow(ctx, listRequest(a.Cfg.TemporalNamespace))
	if err != nil {
		t.Fatalf("list workflows: %v", err)
	}
	for _, wf := range list.Executions {
		it := a.Temporal.GetWorkflowHistory(ctx, wf.Execution.WorkflowId, wf.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", wf.Execution.WorkflowId, err)
			}
			b, err := proto.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b...)
		}
	}
	if len(list.Executions) == 0 {
		t.Fatal("no workflows listed")
	}
	return out
}

// dataFiles reads every file under dir.
func dataFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func listRequest(ns string) *workflowservice.ListWorkflowExecutionsRequest {
	return &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, PageSize: 1000}
}
