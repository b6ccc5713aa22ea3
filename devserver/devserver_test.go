package devserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/schema/sqlite"
)

var testKey = temporal.NewSearchAttributeKeyKeyword("DevserverTestKey")

func echoWorkflow(ctx workflow.Context, s string) (string, error) { return "echo " + s, nil }

func startTest(t *testing.T, dir string) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, Config{
		DataDir:          dir,
		UIPort:           0,
		SearchAttributes: map[string]enumspb.IndexedValueType{testKey.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD},
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("start devserver: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// TestRestartKeepsHistories: a workflow run on the embedded server, with a
// custom search attribute, is still described, listed and queryable by that
// attribute after the server stops and starts again on the same directory;
// the UI serves pages on both runs.
func TestRestartKeepsHistories(t *testing.T) {
	t.Run("visibility in its own file", func(t *testing.T) {
		dir := t.TempDir()
		restartKeepsHistories(t, dir)
		vis := filepath.Join(dir, visibilityFileName)
		if _, err := os.Stat(vis); err != nil {
			t.Fatalf("no visibility file: %v", err)
		}
		idx := indexes(t, vis)
		if !idx["by_keyword_01"] || !idx["by_status"] || !idx["default_idx"] || idx["by_bool_01"] || idx["by_int_03"] {
			t.Errorf("visibility indexes after trimming: %v", idx)
		}
	})
	// A data directory created before visibility had its own file keeps
	// working with its single file.
	t.Run("single file of an earlier version", func(t *testing.T) {
		dir := t.TempDir()
		cfg := &config.SQL{PluginName: "sqlite", DatabaseName: filepath.Join(dir, dbFileName),
			ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"}}
		if err := sqlite.SetupSchema(cfg); err != nil {
			t.Fatal(err)
		}
		restartKeepsHistories(t, dir)
		if _, err := os.Stat(filepath.Join(dir, visibilityFileName)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a visibility file appeared in a single-file data directory: %v", err)
		}
	})
}

// indexes lists the indexes of the visibility table in the SQLite file.
func indexes(t *testing.T, path string) map[string]bool {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[n] = true
	}
	return out
}

func restartKeepsHistories(t *testing.T, dir string) {
	s := startTest(t, dir)
	for _, addr := range []string{s.FrontendAddress(), s.UIAddress()} {
		if !strings.Contains(addr, "127.0.0.1:") {
			t.Errorf("%q is not on 127.0.0.1", addr)
		}
	}
	checkUI(t, s.UIAddress())

	c, err := client.Dial(client.Options{HostPort: s.FrontendAddress(), Namespace: s.Namespace()})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	w := worker.New(c, "devserver-test", worker.Options{})
	w.RegisterWorkflow(echoWorkflow)
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "kept/1", TaskQueue: "devserver-test",
		TypedSearchAttributes: temporal.NewSearchAttributes(testKey.ValueSet("blue")),
	}, echoWorkflow, "hi")
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil || out != "echo hi" {
		t.Fatalf("workflow result %q, %v", out, err)
	}
	w.Stop()
	c.Close()
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	s2 := startTest(t, dir)
	checkUI(t, s2.UIAddress())
	c2, err := client.Dial(client.Options{HostPort: s2.FrontendAddress(), Namespace: s2.Namespace()})
	if err != nil {
		t.Fatalf("dial after restart: %v", err)
	}
	defer c2.Close()
	desc, err := c2.DescribeWorkflowExecution(ctx, "kept/1", "")
	if err != nil {
		t.Fatalf("describe after restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("status after restart = %s", st)
	}
	query := fmt.Sprintf("%s = 'blue'", testKey.GetName())
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c2.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: s2.Namespace(), Query: query})
		if err == nil && len(resp.GetExecutions()) == 1 && resp.GetExecutions()[0].GetExecution().GetWorkflowId() == "kept/1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("visibility query %q after restart: %v, %d executions", query, err, len(resp.GetExecutions()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDataDirIsExclusive: two servers never share one database.
func TestDataDirIsExclusive(t *testing.T) {
	dir := t.TempDir()
	startTest(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Start(ctx, Config{DataDir: dir, UIPort: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second server on the same directory: err = %v, want 'in use'", err)
	}
}

func TestConfigRefusesBadValues(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no data dir":   {},
		"bad host":      {Ephemeral: true, Host: "not-an-ip"},
		"bad port":      {Ephemeral: true, FrontendPort: 70000},
		"bad UI port":   {Ephemeral: true, UIPort: -2},
		"bad log level": {Ephemeral: true, LogLevel: "loud"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := Start(ctx, cfg)
			if err == nil {
				_ = s.Stop()
				t.Fatalf("Start(%+v) succeeded", cfg)
			}
		})
	}
}

func checkUI(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatalf("UI: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(strings.ToLower(string(b)), "<html") {
		t.Fatalf("UI answered %d: %.200s", resp.StatusCode, b)
	}
}
