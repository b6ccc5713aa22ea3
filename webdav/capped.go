package webdav

import (
	"sync"
	"sync/atomic"
)

// cappedMap is a sync.Map of cache entries keyed by user id that holds at
// most about max entries: storing a new key beyond max drops all the others (the
// entries are caches, recomputed on the next miss). Without it a process
// serving many users over weeks would keep an entry for every user it
// ever saw (issue 20). The count is approximate under races, never more
// than max plus the stores racing with a clear.
type cappedMap struct {
	m   sync.Map
	n   atomic.Int64
	max int64
}

func (c *cappedMap) Load(k string) (any, bool) { return c.m.Load(k) }

func (c *cappedMap) Store(k string, v any) {
	if _, loaded := c.m.Swap(k, v); loaded {
		return
	}
	if c.n.Add(1) > c.max {
		c.m.Clear()
		c.m.Store(k, v)
		c.n.Store(1)
	}
}

func (c *cappedMap) Delete(k string) {
	if _, loaded := c.m.LoadAndDelete(k); loaded {
		c.n.Add(-1)
	}
}

// maxCachedUsers bounds each per-user cache (root directory made, no dead
// properties, active locks): a few hundred bytes an entry, except the lock
// cache, whose entries are also capped in bytes (maxCachedLockBytes).
const maxCachedUsers = 4096

// maxCachedLockBytes caps one user's cached locks (their owners, paths and
// tokens): a user holding more is read from the database on every write,
// so the lock cache holds at most maxCachedUsers x 8 KiB = 32 MiB.
const maxCachedLockBytes = 8 << 10
