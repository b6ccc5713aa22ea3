package webdav

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/webdav/contents"
)

// The sweep removes what no node references after crashes and deletes:
// uploads whose process died (their multipart upload aborted, any object
// deleted), live objects no node references (a deleted tree's, or one a
// reclaim after its commit could not delete), reclaims left half-done,
// and, as a backstop, objects and multipart uploads in the bucket that
// have no dav_blobs row at all. Every replica may run it at once: each
// removal is claimed by a conditional UPDATE, and deleting an object twice
// is harmless. A pass is bounded by SweepOptions.Limit rows of each kind
// and Limit listed objects; the listing resumes where the last pass of
// this process stopped.

// SweepOptions bound one sweep pass.
type SweepOptions struct {
	// Grace spares uploads touched, and unrecorded objects written, this
	// recently (default DefaultSweepGrace): a live upload touches its row
	// after every part.
	Grace time.Duration
	// Limit bounds the rows of each kind and the listed objects one pass
	// looks at (default 1000).
	Limit int
	// Logger receives what could not be removed; nil = slog.Default().
	Logger *slog.Logger
}

// DefaultSweepGrace is SweepOptions.Grace's default: far longer than a
// part (8 MiB) takes to arrive from any client still sending.
const DefaultSweepGrace = time.Hour

// DefaultSweepInterval is how often RunSweeper sweeps by default.
const DefaultSweepInterval = defaults.SweepInterval

// SweepStats counts what a pass removed.
type SweepStats struct {
	// Uploads: abandoned uploads removed (multipart aborted, object gone).
	Uploads int
	// Objects: unreferenced objects deleted.
	Objects int
	// Unrecorded: objects and multipart uploads without any row removed.
	Unrecorded int
}

// SweepOnce runs one bounded pass of the sweep over store.
func SweepOnce(ctx context.Context, db *gorm.DB, store contents.Store, opts SweepOptions) (SweepStats, error) {
	if opts.Grace <= 0 {
		opts.Grace = DefaultSweepGrace
	}
	if opts.Limit <= 0 {
		opts.Limit = 1000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &sweeper{b: &blobs{db: db, contents: store, log: opts.Logger}, opts: opts, cutoff: time.Now().Add(-opts.Grace).UnixNano()}
	var st SweepStats
	var err error
	if st.Uploads, err = s.abandonedUploads(ctx); err != nil {
		return st, err
	}
	if st.Objects, err = s.unreferenced(ctx); err != nil {
		return st, err
	}
	if err = s.halfReclaimed(ctx); err != nil {
		return st, err
	}
	st.Unrecorded, err = s.unrecorded(ctx)
	return st, err
}

type sweeper struct {
	b      *blobs
	opts   SweepOptions
	cutoff int64
}

func (s *sweeper) abandonedUploads(ctx context.Context) (int, error) {
	rows, err := s.b.staleUploads(ctx, s.cutoff, s.opts.Limit)
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	n := 0
	for _, r := range rows {
		claimed, err := s.b.claimStaleUpload(ctx, r.Key, s.cutoff)
		if err != nil {
			return n, fmt.Errorf("sweep: %w", err)
		}
		if !claimed {
			continue // touched again, or another replica took it
		}
		if r.UploadID != "" {
			if err := s.b.contents.AbortUpload(ctx, r.Key, r.UploadID); err != nil {
				s.opts.Logger.Warn("webdav sweep: abort upload", "key", r.Key, "err", err)
				continue
			}
		}
		if err := s.b.finish(ctx, r.Key); err != nil {
			s.opts.Logger.Warn("webdav sweep: delete abandoned upload", "key", r.Key, "err", err)
			continue
		}
		n++
	}
	return n, nil
}

func (s *sweeper) unreferenced(ctx context.Context) (int, error) {
	keys, err := s.b.unreferenced(ctx, s.opts.Limit)
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	n := 0
	for _, k := range keys {
		ok, err := s.b.reclaim(ctx, k)
		if err != nil {
			s.opts.Logger.Warn("webdav sweep: reclaim", "key", k, "err", err)
			continue
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// halfReclaimed finishes reclaims whose process died between the claim
// and the object's deletion.
func (s *sweeper) halfReclaimed(ctx context.Context) error {
	keys, err := s.b.staleDeletions(ctx, s.cutoff, s.opts.Limit)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	for _, k := range keys {
		if err := s.b.finish(ctx, k); err != nil {
			s.opts.Logger.Warn("webdav sweep: delete", "key", k, "err", err)
		}
	}
	return nil
}

// scanCursors keeps each store's listing position between passes of this
// process.
var scanCursors sync.Map // contents.Store -> string

// unrecorded deletes listed objects and multipart uploads older than the
// grace period that no row records: a small body's object written by a
// process that died before its node commit (backend_nodes_write.go writes those
// before their row), or what a restored database or a manual copy leaves.
func (s *sweeper) unrecorded(ctx context.Context) (int, error) {
	cur, _ := scanCursors.Load(s.b.contents)
	cursor, _ := cur.(string)
	objs, next, err := s.b.contents.Scan(ctx, cursor, s.opts.Limit)
	if err != nil {
		return 0, fmt.Errorf("sweep: list the store: %w", err)
	}
	scanCursors.Store(s.b.contents, next)
	n := 0
	for _, o := range objs {
		if o.AgeNs < int64(s.opts.Grace) {
			continue
		}
		rows, err := s.b.lookup(ctx, o.Key)
		if err != nil {
			return n, fmt.Errorf("sweep: %w", err)
		}
		if o.UploadID != "" {
			if len(rows) == 1 && rows[0].State == blobUploading && rows[0].UploadID == o.UploadID {
				continue
			}
			if err := s.b.contents.AbortUpload(ctx, o.Key, o.UploadID); err == nil {
				n++
			}
			continue
		}
		if len(rows) == 1 {
			continue
		}
		if err := s.b.contents.Delete(ctx, o.Key); err == nil {
			n++
		}
	}
	return n, nil
}

// RunSweeper sweeps every interval until ctx ends (tree mode only; a
// no-op in POSIX mode). Every replica may run it.
func (h *Handler) RunSweeper(ctx context.Context, interval time.Duration) {
	s, ok := h.store.(sweeping)
	if !ok {
		return
	}
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := s.sweepOnce(ctx)
		if err != nil {
			h.log.Warn("webdav sweep", "err", err)
			continue
		}
		if st != (SweepStats{}) {
			h.log.Info("webdav sweep", "uploads", st.Uploads, "objects", st.Objects, "unrecorded", st.Unrecorded)
		}
	}
}
