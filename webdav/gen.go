package webdav

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// Generation counters of the tables the Handler caches answers from. A
// cached answer is trusted only while the counter it was read under is
// unchanged; writers advance the counter after they commit.
const (
	genLocks = iota // dav_locks
	genProps        // dav_props
	genSlots
)

// generations are the Handler's change counters. On SQLite they live in a
// small file mapped into memory beside the database file (shared), so
// every process serving that database — replicas on one host, as SQLite
// requires — sees every other's writes at once, for the cost of an atomic
// load. On Postgres, whose replicas may run on several hosts where a
// shared mapping is not coherent, they are this process's own, and the
// caches that need every replica's writes (the lock cache) stay off.
type generations struct {
	c      *[genSlots]atomic.Uint64
	shared bool
}

func (g generations) load(slot int) uint64 { return g.c[slot].Load() }
func (g generations) bump(slot int)        { g.c[slot].Add(1) }

// genFileSuffix names the counters' file: "<database>.webdav-gen".
const genFileSuffix = ".webdav-gen"

// openGenerations maps the counters of db's SQLite file, or returns
// process-local ones for Postgres and in-memory databases.
func openGenerations(ctx context.Context, db *gorm.DB) (generations, error) {
	local := generations{c: new([genSlots]atomic.Uint64)}
	if models.IsPostgres(db) {
		return local, nil
	}
	var file string
	rows, err := db.WithContext(ctx).Raw("PRAGMA database_list").Rows()
	if err != nil {
		return local, fmt.Errorf("find the database file: %w", err)
	}
	for rows.Next() {
		var seq int
		var name, path string
		if err := rows.Scan(&seq, &name, &path); err != nil {
			rows.Close()
			return local, fmt.Errorf("find the database file: %w", err)
		}
		if name == "main" {
			file = path
		}
	}
	rows.Close()
	if file == "" { // in-memory: one process by construction
		return local, nil
	}
	f, err := os.OpenFile(file+genFileSuffix, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return local, fmt.Errorf("open change counters: %w", err)
	}
	defer f.Close() // the mapping outlives the descriptor
	size := int(unsafe.Sizeof([genSlots]atomic.Uint64{}))
	if fi, err := f.Stat(); err != nil {
		return local, fmt.Errorf("open change counters: %w", err)
	} else if fi.Size() < int64(size) {
		// Growing only: truncating a file another process has mapped
		// would fault its next access.
		if err := f.Truncate(int64(size)); err != nil {
			return local, fmt.Errorf("size change counters: %w", err)
		}
	}
	mem, err := mapShared(f, size)
	if errors.Is(err, errNoMmap) {
		return local, nil // as on Postgres: no cache, every write queries
	}
	if err != nil {
		return local, fmt.Errorf("map change counters: %w", err)
	}
	// Page-aligned, so the 64-bit atomics are aligned too.
	return generations{c: (*[genSlots]atomic.Uint64)(unsafe.Pointer(&mem[0])), shared: true}, nil
}

// lockCacheTTL bounds how long a user's cached locks are trusted even with
// the counter unchanged: a replica that died between committing a lock
// change and advancing the counter leaves the others stale for no longer.
const lockCacheTTL = 2 * time.Second

type lockCacheEntry struct {
	at    time.Time
	gen   uint64 // the locks counter when the query began
	locks []models.DavLock
}

// cachedLocks returns the user's locks from the cache when the lock
// counter has not moved since they were read, and none of them has
// expired meanwhile (an expired one sends the caller to the database,
// which sweeps it).
func (h *Handler) cachedLocks(userID string, gen uint64) ([]models.DavLock, bool) {
	v, ok := h.lockCache.Load(userID)
	if !ok {
		return nil, false
	}
	e := v.(lockCacheEntry)
	if e.gen != gen || time.Since(e.at) >= h.lockTTL {
		return nil, false
	}
	now := time.Now().Unix()
	for i := range e.locks {
		if e.locks[i].Expires <= now {
			return nil, false
		}
	}
	if len(e.locks) == 0 {
		return nil, true
	}
	// Callers may change what they get (a refresh sets new expiry).
	return append([]models.DavLock(nil), e.locks...), true
}

// locksChanged runs after any committed change to dav_locks.
func (h *Handler) locksChanged() { h.gen.bump(genLocks) }
