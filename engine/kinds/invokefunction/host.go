package invokefunction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/functions"
	"github.com/ontoflow/ontoflow/functions/runtime"
	"github.com/ontoflow/ontoflow/media"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/outbound"
)

// Query limits of ctx.ontology.query.
const (
	functionQueryDefault = 100
	functionQueryMax     = 1000
	functionFetchMax     = 1 << 20
	// functionReadsMax bounds the distinct objects one run may read: each
	// is remembered in the effect step's result (the stale-read check),
	// which Temporal keeps in history under its 2 MB payload limit.
	functionReadsMax = 5000
)

// functionHost answers a function's host calls for one run, with the
// actor's read rule: an object the actor may not read does not exist for
// the function. It remembers the update time of every object it answered
// (the stale-read check).
type functionHost struct {
	op     *engine.Op
	reads  Reads
	client *http.Client
	seen   map[string]string
	// scanned: the function used query or links. Outside a transaction
	// their reads go through the store's own connections; such a run is
	// not re-run inside the transaction after a stale read (kept as it
	// was; with op.Tx set they read through it, see Reads).
	scanned bool
	// media are the files ctx.media read (path -> SHA-256); staleMedia
	// names a pinned parameter whose file was found changed (the run
	// fails; media.go).
	media      map[string]string
	staleMedia string
}

// TestHost is the host of a run outside an action (a package's test run,
// functions.Options.TestHost): the same reads, read rule and query limits
// as an action's run, as actor, over the ontology store outside any
// transaction, without network.
func TestHost(actor *models.User, reads *functions.Reads) runtime.Host {
	return &functionHost{op: &engine.Op{Actor: actor, Ontology: reads.Store()}, reads: reads, seen: map[string]string{}}
}

// TestHostOver is TestHost with ctx.media over the tester's own tree in
// store (nil: none; publicURL as engine.Op.WithMedia). A test run has no
// execution, so no parameter is pinned: ctx.media reads files as they
// are now (docs/functions.md, "Files").
func TestHostOver(store media.Store, publicURL string) func(*models.User, *functions.Reads) runtime.Host {
	return func(actor *models.User, reads *functions.Reads) runtime.Host {
		return &functionHost{op: (&engine.Op{Actor: actor, Ontology: reads.Store()}).WithMedia(store, publicURL),
			reads: reads, seen: map[string]string{}}
	}
}

// updatedStamp is what a read of o records: its update time, or "" when
// it is absent or unreadable for op's actor.
func updatedStamp(o *engine.Object, op *engine.Op) string {
	if o == nil || !op.Ontology.CanRead(op.Actor, o.Marking, o.Organization) {
		return ""
	}
	return o.UpdatedAt.UTC().Format(time.RFC3339Nano)
}

func (h *functionHost) saw(id string, o *engine.Object) error {
	if _, ok := h.seen[id]; !ok && len(h.seen) >= functionReadsMax {
		return fmt.Errorf("a function may read at most %d distinct objects per run", functionReadsMax)
	}
	h.seen[id] = updatedStamp(o, h.op)
	return nil
}

var _ functions.ObjectsRead = (*functionHost)(nil)

// ObjectsRead implements functions.ObjectsRead: the ids whose data reached the
// function, sorted (an absent or unreadable one gave it nothing).
func (h *functionHost) ObjectsRead() []string {
	ids := make([]string, 0, len(h.seen))
	for id, stamp := range h.seen {
		if stamp != "" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// objectView is an object as a function sees it.
func objectView(o *engine.Object) map[string]any {
	return map[string]any{"id": o.ID, "object_type_id": o.ObjectTypeID, "properties": o.Properties,
		"marking": o.Marking, "created_by": o.CreatedBy, "created_at": o.CreatedAt, "updated_at": o.UpdatedAt}
}

// Get implements runtime.Host.
func (h *functionHost) Get(ctx context.Context, id string) (any, error) {
	o, err := h.op.Ontology.In(h.op.Tx).Object(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("ontology.get(%q): %w", id, err)
	}
	if err := h.saw(id, o); err != nil {
		return nil, err
	}
	if h.seen[id] == "" {
		return nil, nil
	}
	return objectView(o), nil
}

var _ runtime.AggregateHost = (*functionHost)(nil)

// Aggregate implements runtime.AggregateHost: the REST aggregation under
// the actor's read rule. Its figures come from many objects and name
// none, so, like query, it marks the run as one that scanned.
func (h *functionHost) Aggregate(ctx context.Context, objectType string, request json.RawMessage) (any, error) {
	if h.reads == nil {
		return nil, errors.New("ontology.aggregate is not available in this process")
	}
	h.scanned = true
	res, err := h.reads.Aggregate(ctx, h.op.Tx, h.op.Actor, objectType, request)
	if err != nil {
		return nil, fmt.Errorf("ontology.aggregate(%q): %w", objectType, err)
	}
	return res, nil
}

// Query implements runtime.Host.
func (h *functionHost) Query(ctx context.Context, objectType string, filters map[string]any, limit int) (any, error) {
	if h.reads == nil {
		return nil, errors.New("ontology.query is not available in this process")
	}
	if limit <= 0 {
		limit = functionQueryDefault
	}
	h.scanned = true
	objs, err := h.reads.Query(ctx, h.op.Tx, h.op.Actor, objectType, filters, min(limit, functionQueryMax))
	if err != nil {
		return nil, fmt.Errorf("ontology.query(%q): %w", objectType, err)
	}
	out := make([]any, 0, len(objs))
	for i := range objs {
		if err := h.saw(objs[i].ID, &objs[i]); err != nil {
			return nil, err
		}
		out = append(out, objectView(&objs[i]))
	}
	return out, nil
}

// Links implements runtime.Host: the links of a readable object whose
// other end the actor may read too.
func (h *functionHost) Links(ctx context.Context, id, linkType string) (any, error) {
	if h.reads == nil {
		return nil, errors.New("ontology.links is not available in this process")
	}
	o, err := h.op.Ontology.In(h.op.Tx).Object(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("ontology.links(%q): %w", id, err)
	}
	if err := h.saw(id, o); err != nil {
		return nil, err
	}
	if h.seen[id] == "" {
		return []any{}, nil
	}
	h.scanned = true
	links, err := h.reads.Links(ctx, h.op.Tx, h.op.Actor, o.ObjectTypeID, id, linkType)
	if err != nil {
		return nil, fmt.Errorf("ontology.links(%q): %w", id, err)
	}
	out := make([]any, 0, len(links))
	for _, l := range links {
		out = append(out, map[string]any{"id": l.ID, "link_type_id": l.LinkTypeID, "source_object_id": l.SourceID,
			"target_object_id": l.TargetID, "properties": l.Properties})
	}
	return out, nil
}

// Fetch implements runtime.Host through the outbound (SSRF-guarded)
// client; the runtime offers it only with the network capability.
func (h *functionHost) Fetch(ctx context.Context, r runtime.FetchRequest) (*runtime.FetchResponse, error) {
	if h.client == nil {
		return nil, errors.New("fetch is not available in this process")
	}
	method := strings.ToUpper(r.Method)
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, strings.NewReader(r.Body))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", r.URL, err)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", r.URL, err)
	}
	defer outbound.Drain(resp.Body)
	body, _, err := outbound.ReadBody(resp.Body, functionFetchMax)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: read the answer: %w", r.URL, err)
	}
	out := &runtime.FetchResponse{Status: resp.StatusCode, Headers: map[string]string{}, Body: string(body)}
	for k := range resp.Header {
		out.Headers[strings.ToLower(k)] = resp.Header.Get(k)
	}
	return out, nil
}
