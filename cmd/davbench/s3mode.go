//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ontoflow/ontoflow/internal/harness/s3test"
)

// startOntoflowS3 starts the third server of a run with -store: the same
// handler as "Ontoflow", its tree in its own SQLite file and its contents
// in S3 (versitygw started here over WORKDIR/s3, or the store URL given),
// and gives it the same trees as the others, through WebDAV since S3 mode
// has no tree on disk.
// When davbench started versitygw itself, alone drives it directly (the
// "S3 server alone" baseline); otherwise alone is nil.
func startOntoflowS3(ctx context.Context, cfg runConfig, big []byte) (*server, *s3Alone, func(), error) {
	store, env := cfg.store, []string(nil)
	stopS3 := func() {}
	var alone *s3Alone
	if cfg.store == "versitygw" {
		bin := cfg.versitygw
		if bin == "" {
			bin = s3test.Binary()
		}
		if bin == "" {
			return nil, nil, nil, errors.New("-store versitygw: no versitygw binary; " + s3test.BuildHint)
		}
		dir := filepath.Join(cfg.workdir, "s3")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, nil, fmt.Errorf("create %s: %w", dir, err)
		}
		gw, err := s3test.Launch(bin, dir, "")
		if err != nil {
			if gw != nil {
				gw.Stop()
			}
			return nil, nil, nil, fmt.Errorf("start versitygw: %w", err)
		}
		slog.Info("versitygw", "endpoint", gw.Endpoint, "dir", dir)
		store, env, stopS3 = gw.URL("davbench"), gw.Env(), gw.Stop
		alone = newS3Alone(gw, gw.Pid())
	}
	dir := filepath.Join(cfg.workdir, "ontoflow-s3")
	root, db := filepath.Join(dir, "files"), filepath.Join(dir, "ontoflow.db")
	if err := os.MkdirAll(root, 0o755); err != nil {
		stopS3()
		return nil, nil, nil, fmt.Errorf("create %s: %w", root, err)
	}
	if _, err := prepareOntoflowUser(ctx, db, cfg.user, cfg.pass); err != nil {
		stopS3()
		return nil, nil, nil, err
	}
	s, stopServe, err := startServe(cfg, "Ontoflow S3", cfg.s3Port, root, db, []string{"--store", store}, env)
	if err != nil {
		stopS3()
		return nil, nil, nil, err
	}
	stop := func() { stopServe(); stopS3() }
	if err := waitReady(ctx, s); err != nil {
		stop()
		return nil, nil, nil, err
	}
	for _, t := range []struct {
		name string
		n    int
	}{{"p10k", cfg.files10k}, {"p100k", cfg.files100k}} {
		if err := populateDAV(ctx, s, t.name, t.n); err != nil {
			stop()
			return nil, nil, nil, err
		}
	}
	c := newClient()
	defer c.CloseIdleConnections()
	if _, err := s.put(ctx, c, "big.bin", big); err != nil {
		stop()
		return nil, nil, nil, err
	}
	return s, alone, stop, nil
}

// populateDAV makes folder name hold exactly n files as populate does on
// disk (same names and contents), through WebDAV with 8 clients; a folder
// already complete from an earlier run is kept.
func populateDAV(ctx context.Context, s *server, name string, n int) error {
	c := newClient()
	defer c.CloseIdleConnections()
	if _, entries, _, err := s.propfind(ctx, c, name+"/"); err == nil && entries == n+1 {
		return nil
	}
	resp, err := s.do(ctx, c, http.MethodDelete, name+"/", nil, nil, 0)
	if err != nil {
		return err
	}
	if err := expect(resp, http.StatusNoContent, http.StatusNotFound); err != nil {
		return fmt.Errorf("%s: clear %s: %w", s.name, name, err)
	}
	resp, err = s.do(ctx, c, "MKCOL", name+"/", nil, nil, 0)
	if err != nil {
		return err
	}
	if err := expect(resp, http.StatusCreated); err != nil {
		return fmt.Errorf("%s: MKCOL %s: %w", s.name, name, err)
	}
	slog.Info("populating through WebDAV", "server", s.name, "dir", name, "files", n)
	content := []byte(strings.Repeat("davbench file content line\n", 4))
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				p := fmt.Sprintf("%s/file-%06d.txt", name, i)
				resp, err := s.do(ctx, c, http.MethodPut, p, map[string]string{"Content-Type": "text/plain"}, bytes.NewReader(content), int64(len(content)))
				if err == nil {
					err = expect(resp, http.StatusCreated)
				}
				if err != nil {
					errs[w] = fmt.Errorf("%s: populate %s: %w", s.name, name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
