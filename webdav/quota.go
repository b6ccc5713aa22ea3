package webdav

import (
	"context"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ontoflow/ontoflow/models"
)

// usageEntry caches a user's used bytes: the files' sizes plus the dead
// properties' bytes (propBytes). It is computed by walking the tree and
// summing the properties (at most every usageTTL) and adjusted in place by
// this process's writes; other replicas' writes show up at the next walk.
// quotas.usage holds one entry (about 100 bytes) per user who used WebDAV
// since the process started: bounded by the number of service users.
type usageEntry struct {
	mu    sync.Mutex
	bytes int64
	at    time.Time
	valid bool
	// pending holds the growth of writes admitted against the quota but
	// not yet in place, so concurrent uploads cannot each take the same
	// room.
	pending int64
}

const usageTTL = 30 * time.Second

// quotas admits writes against each user's quota (RFC 4331) and knows
// each user's usage.
type quotas struct {
	// usage holds one usage entry per user who used WebDAV since the
	// start: bounded by the number of service users, about 100 bytes
	// each; not a cache that may be dropped, since it carries the
	// reservations of uploads under way.
	usage        sync.Map // user id -> *usageEntry
	defaultQuota int64
	free         func() int64 // the storage's room without a quota
	props        deadProps    // the dead properties' bytes
}

// of is the user's quota in bytes, or <= 0 for unlimited.
func (h *quotas) of(u *models.User) int64 {
	if u.QuotaBytes > 0 {
		return u.QuotaBytes
	}
	if u.QuotaBytes < 0 {
		return -1
	}
	return h.defaultQuota
}

func (h *quotas) usageEntry(userID string) *usageEntry {
	e, _ := h.usage.LoadOrStore(userID, &usageEntry{})
	return e.(*usageEntry)
}

// used returns the bytes used by the user's tree, counting writes
// admitted and still under way.
func (h *quotas) used(ctx context.Context, t userTree, userID string) (int64, error) {
	e := h.usageEntry(userID)
	e.mu.Lock()
	defer e.mu.Unlock()
	n, err := h.usedLocked(ctx, e, t, userID)
	return n + e.pending, err
}

func (h *quotas) usedLocked(ctx context.Context, e *usageEntry, t userTree, userID string) (int64, error) {
	if e.valid && time.Since(e.at) < usageTTL {
		return e.bytes, nil
	}
	// Not the request's context: the walk fills the cache every
	// request of the user shares.
	ctx = context.WithoutCancel(ctx)
	n, err := t.fileBytes(ctx, "/", nil)
	if err != nil {
		return 0, err
	}
	p, err := h.props.propBytes(ctx, userID)
	if err != nil {
		return 0, err
	}
	e.bytes, e.at, e.valid = n+p, time.Now(), true
	return n + p, nil
}

// maxPropBytes caps one dead property (namespace, name, value and
// language): every PROPFIND of its resource carries it.
const maxPropBytes = 64 << 10

// propSize is what a dead property counts against the quota.
func propSize(space, name, value, lang string) int64 {
	return int64(len(space) + len(name) + len(value) + len(lang))
}

// admit reserves delta bytes of growth of the user's tree against quota
// (> 0), reporting false when they do not fit. Every admitted delta is
// settled once the write is in place or abandoned.
func (h *quotas) admit(ctx context.Context, t userTree, userID string, quota, delta int64) (bool, error) {
	e := h.usageEntry(userID)
	e.mu.Lock()
	defer e.mu.Unlock()
	used, err := h.usedLocked(ctx, e, t, userID)
	if err != nil {
		return false, err
	}
	if delta <= 0 {
		// A shrinking write reserves nothing: the room it frees counts
		// only once it has taken place.
		return true, nil
	}
	if used+e.pending+delta > quota {
		return false, nil
	}
	e.pending += delta
	return true, nil
}

// settle ends an admission: the growth moves from pending into the cached
// usage if the write took place.
func (h *quotas) settle(userID string, delta int64, done bool) {
	e := h.usageEntry(userID)
	e.mu.Lock()
	if delta > 0 {
		e.pending -= delta
	}
	if done && e.valid {
		e.bytes = max(e.bytes+delta, 0)
	}
	e.mu.Unlock()
}

func (h *quotas) add(userID string, delta int64) {
	e := h.usageEntry(userID)
	e.mu.Lock()
	if e.valid {
		e.bytes += delta
		if e.bytes < 0 {
			e.bytes = 0
		}
	}
	e.mu.Unlock()
}

func (h *quotas) invalidate(userID string) {
	e := h.usageEntry(userID)
	e.mu.Lock()
	e.valid = false
	e.mu.Unlock()
}

// staleUploadAge: a temporary upload file untouched this long belongs to
// an upload that died with its process (a crash, a kill) or a client that
// stalled for a day; every write refreshes the mtime of a live one.
const staleUploadAge = 24 * time.Hour

// sweepStaleUpload removes the temporary upload file at name (relative to
// root) if it is stale, and reports whether it did. Listings and quota
// walks call it for the temporary files they skip, so what a crash left
// behind does not occupy the disk and the quota for ever.
func sweepStaleUpload(root *os.Root, name string, e fs.DirEntry) bool {
	fi, err := e.Info()
	if err != nil || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) < staleUploadAge {
		return false
	}
	return root.Remove(name) == nil
}

// treeSize sums regular file sizes below dir (symlinks not followed).
func treeSize(root *os.Root, dir string) (int64, error) {
	d, err := root.Open(dir)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	var total int64
	for {
		ents, rerr := d.ReadDir(512)
		for _, e := range ents {
			if e.IsDir() {
				n, err := treeSize(root, dir+"/"+e.Name())
				if err == nil {
					total += n
				}
				continue
			}
			if e.Type().IsRegular() {
				if strings.HasPrefix(e.Name(), tmpPrefix) && sweepStaleUpload(root, dir+"/"+e.Name(), e) {
					continue
				}
				if fi, err := e.Info(); err == nil {
					total += fi.Size()
				}
			}
		}
		if rerr == io.EOF || len(ents) == 0 {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// values returns (available, used) for RFC 4331. Without a quota,
// available is the free space of the file system.
func (h *quotas) values(ctx context.Context, t userTree, u *models.User) (int64, int64, error) {
	used, err := h.used(ctx, t, u.ID)
	if err != nil {
		return 0, 0, err
	}
	if q := h.of(u); q > 0 {
		avail := q - used
		if avail < 0 {
			avail = 0
		}
		return avail, used, nil
	}
	return h.free(), used, nil
}
