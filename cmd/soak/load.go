package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 5 * time.Minute}

// load is the soak's traffic against one API base URL.
type load struct {
	api, user, pass string
	clients         int
	batchItems      int
	batchEvery      time.Duration
	files           int
	fileSize        int

	actionID string
	targets  []string

	executions atomic.Int64 // single executions that succeeded
	batchDone  atomic.Int64 // batch items that succeeded
	davReqs    atomic.Int64 // WebDAV requests answered as expected

	failOnce sync.Once
	failErr  error
	failed   chan struct{}
}

// fail records the first failed request and stops the run.
func (l *load) fail(err error) {
	l.failOnce.Do(func() {
		l.failErr = err
		close(l.failed)
	})
}

// setup creates an object type with an owner, targets for the clients and
// batches, and an update_object action that notifies the actor in app.
func (l *load) setup(ctx context.Context) error {
	if err := l.post(ctx, "/api/v1/ontology/types", map[string]any{"name": "SoakTicket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}, {"name": "priority", "type": "integer"}}}, 201, nil); err != nil {
		return err
	}
	var a struct {
		ID string `json:"id"`
	}
	if err := l.post(ctx, "/api/v1/ontology/actions", map[string]any{"name": "soak-set-priority", "object_type_id": "SoakTicket", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "priority", "type": "integer", "required": true}},
		"config": map[string]any{
			"operation": map[string]any{"property_mappings": []map[string]any{{"property": "priority", "input": "priority"}}},
			"notification_side_effects": []map[string]any{{
				"title": "{{ target.properties.title }} is now priority {{ object.properties.priority }}",
				"body":  "{{ actor.username }} changed it", "send_to_actor": true, "channels": []string{"in_app"},
			}},
		}}, 201, &a); err != nil {
		return err
	}
	l.actionID = a.ID
	// Each client and the batches have targets of their own, so no two
	// writers queue on one object.
	n := l.clients*4 + l.batchItems
	for i := 0; i < n; i++ {
		var o struct {
			ID string `json:"id"`
		}
		if err := l.post(ctx, "/api/v1/ontology/types/SoakTicket/objects", map[string]any{"properties": map[string]any{"title": fmt.Sprintf("soak-%d", i)}}, 201, &o); err != nil {
			return err
		}
		l.targets = append(l.targets, o.ID)
	}
	return l.dav(ctx, "MKCOL", "/webdav/soak/", nil, http.StatusCreated)
}

// run drives the traffic until ctx ends or a request fails.
func (l *load) run(ctx context.Context) {
	var wg sync.WaitGroup
	for c := 0; c < l.clients; c++ {
		wg.Add(1)
		go func() { defer wg.Done(); l.executeLoop(ctx, c) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); l.batchLoop(ctx) }()
	go func() { defer wg.Done(); l.davLoop(ctx) }()
	wg.Wait()
}

// executeLoop executes the action synchronously, one after another.
func (l *load) executeLoop(ctx context.Context, client int) {
	mine := l.targets[client*4 : client*4+4]
	for i := 0; ctx.Err() == nil; i++ {
		var ex struct {
			Status string `json:"status"`
		}
		err := l.post(ctx, "/api/v1/ontology/actions/"+l.actionID+"/execute",
			map[string]any{"target_object_id": mine[i%len(mine)], "parameters": map[string]any{"priority": i}}, 200, &ex)
		if err == nil && ex.Status != "succeeded" {
			err = fmt.Errorf("execute: status %q", ex.Status)
		}
		if err != nil {
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("client %d: %w", client, err))
			}
			return
		}
		l.executions.Add(1)
	}
}

// batchLoop submits a synchronous batch every batchEvery (the next one
// waits while one is still running).
func (l *load) batchLoop(ctx context.Context) {
	targets := l.targets[l.clients*4:]
	t := time.NewTicker(l.batchEvery)
	defer t.Stop()
	for round := 0; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		items := make([]map[string]any, l.batchItems)
		for i := range items {
			items[i] = map[string]any{"target_object_id": targets[i%len(targets)], "parameters": map[string]any{"priority": round}}
		}
		var ex struct {
			Status string `json:"status"`
			Totals struct {
				Succeeded, Failed int
			} `json:"totals"`
		}
		err := l.post(ctx, "/api/v1/ontology/actions/"+l.actionID+"/execute-batch", map[string]any{"items": items}, 200, &ex)
		if err == nil && ex.Totals.Succeeded != l.batchItems {
			err = fmt.Errorf("batch: %d of %d succeeded (%d failed, status %q)", ex.Totals.Succeeded, l.batchItems, ex.Totals.Failed, ex.Status)
		}
		if err != nil {
			if ctx.Err() == nil {
				l.fail(err)
			}
			return
		}
		l.batchDone.Add(int64(l.batchItems))
	}
}

// davLoop puts files 4 KiB files into /webdav/soak/ and lists the folder,
// over and over (the second round onwards overwrites).
func (l *load) davLoop(ctx context.Context) {
	body := bytes.Repeat([]byte("soak data\n"), l.fileSize/10+1)[:l.fileSize]
	for round := 0; ctx.Err() == nil; round++ {
		for i := 0; i < l.files && ctx.Err() == nil; i++ {
			want := http.StatusNoContent
			if round == 0 {
				want = http.StatusCreated
			}
			if err := l.dav(ctx, "PUT", fmt.Sprintf("/webdav/soak/f%03d.txt", i), body, want); err != nil {
				if ctx.Err() == nil {
					l.fail(err)
				}
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		if err := l.dav(ctx, "PROPFIND", "/webdav/soak/", nil, http.StatusMultiStatus); err != nil {
			if ctx.Err() == nil {
				l.fail(err)
			}
			return
		}
	}
}

func (l *load) dav(ctx context.Context, method, path string, body []byte, want int) error {
	req, err := http.NewRequestWithContext(ctx, method, l.api+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if method == "PROPFIND" {
		req.Header.Set("Depth", "1")
	}
	req.SetBasicAuth(l.user, l.pass)
	data, err := l.do(req, want)
	if err != nil {
		return err
	}
	if method == "PROPFIND" && strings.Count(string(data), "href>")/2 < l.files+1 {
		return fmt.Errorf("PROPFIND %s: fewer than %d entries", path, l.files+1)
	}
	l.davReqs.Add(1)
	return nil
}

func (l *load) post(ctx context.Context, path string, body any, want int, out any) error {
	js, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", l.api+path, bytes.NewReader(js))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(l.user, l.pass)
	data, err := l.do(req, want)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(data, out)
}

func (l *load) do(req *http.Request, want int) ([]byte, error) {
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d (want %d) %.300s", req.Method, req.URL.Path, resp.StatusCode, want, data)
	}
	return data, nil
}
