package webdav

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// subtree returns a SQL condition matching col == p or anything below p,
// as an index-friendly range: every path below p starts with p+"/", and
// those sort between p+"/" and p+"0" ('0' follows '/') in byte order.
// Postgres compares with the "C" collation to get byte order; SQLite's
// default BINARY collation already is.
func subtree(tx *gorm.DB, col, p string) (string, []any) {
	if p == "/" {
		return "1 = 1", nil
	}
	c := col
	if models.IsPostgres(tx) {
		c = col + ` COLLATE "C"`
	}
	return "(" + col + " = ? OR (" + c + " > ? AND " + c + " < ?))", []any{p, p + "/", p + "0"}
}

// batchPaths bounds IN lists.
const batchPaths = 500

// hasProps reports whether the user has any dead property at all: PROPFIND
// skips the per-batch property queries for users who never set one.
func (h *Handler) hasProps(ctx context.Context, userID string) (bool, error) {
	var n int64
	if err := h.db.WithContext(ctx).Raw("SELECT 1 FROM dav_props WHERE user_id = ? LIMIT 1", userID).Scan(&n).Error; err != nil {
		return false, fmt.Errorf("look for dead properties: %w", err)
	}
	return n == 1, nil
}

// dropStaleProps removes dead properties left at a path that holds no
// resource (a file deleted behind the server's back, or a crash between
// removing a file and its metadata), so a new file never inherits them.
//
// Every new file asks, so the common answer is cached: a user found to
// have no dead property at all is skipped for noPropsTTL, unless a
// property is written meanwhile (by any process on a SQLite database,
// whose change counters are shared; by this one on Postgres). What the
// Postgres case can miss is a property another replica set in that window
// on a path whose file then vanished behind the servers' backs: too narrow
// to be worth a query per upload. PROPFIND never uses the cache.
func (h *Handler) dropStaleProps(ctx context.Context, userID, p string) error {
	gen := h.gen.load(genProps)
	if v, ok := h.noProps.Load(userID); ok {
		if e := v.(noPropsEntry); e.gen == gen && time.Since(e.at) < noPropsTTL {
			return nil
		}
	}
	at := time.Now()
	has, err := h.hasProps(ctx, userID)
	if err != nil {
		return err
	}
	if !has {
		h.noProps.Store(userID, noPropsEntry{at: at, gen: gen})
		return nil
	}
	h.noProps.Delete(userID)
	var n int64
	if err := h.db.WithContext(ctx).Raw("SELECT 1 FROM dav_props WHERE user_id = ? AND path = ? LIMIT 1", userID, p).Scan(&n).Error; err != nil {
		return fmt.Errorf("look for stale properties: %w", err)
	}
	if n == 0 {
		return nil
	}
	if err := h.db.WithContext(ctx).Exec("DELETE FROM dav_props WHERE user_id = ? AND path = ?", userID, p).Error; err != nil {
		return fmt.Errorf("drop stale properties: %w", err)
	}
	return nil
}

// noPropsTTL bounds how long "this user has no dead properties" is
// trusted (the same order as auth's user cache).
const noPropsTTL = 2 * time.Second

type noPropsEntry struct {
	at  time.Time
	gen uint64 // the properties counter when the query began
}

// propsWritten invalidates the no-properties cache. It runs after any
// write that may add a dead property has ended: a query that began before
// the write carries the older generation, so its answer is never trusted.
func (h *Handler) propsWritten() { h.gen.bump(genProps) }

// propsFor loads the dead properties of paths.
func (h *Handler) propsFor(ctx context.Context, userID string, paths []string) (map[string][]models.DavProp, error) {
	out := map[string][]models.DavProp{}
	for len(paths) > 0 {
		n := min(len(paths), batchPaths)
		var rows []models.DavProp
		if err := h.db.WithContext(ctx).Where("user_id = ? AND path IN ?", userID, paths[:n]).
			Order("path, space, name").Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.Path] = append(out[r.Path], r)
		}
		paths = paths[n:]
	}
	return out, nil
}

// sumsFor loads recorded checksums of paths.
func (h *Handler) sumsFor(ctx context.Context, userID string, paths []string) (map[string]models.DavChecksum, error) {
	out := map[string]models.DavChecksum{}
	for len(paths) > 0 {
		n := min(len(paths), batchPaths)
		var rows []models.DavChecksum
		if err := h.db.WithContext(ctx).Where("user_id = ? AND path IN ?", userID, paths[:n]).Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.Path] = r
		}
		paths = paths[n:]
	}
	return out, nil
}

// deleteMeta drops the properties, checksums and locks of p and below.
func deleteMeta(tx *gorm.DB, userID, p string, locks bool) error {
	cond, args := subtree(tx, "path", p)
	args = append([]any{userID}, args...)
	tables := []string{"dav_props", "dav_checksums"}
	if locks {
		tables = append(tables, "dav_locks")
	}
	for _, t := range tables {
		if err := tx.Exec("DELETE FROM "+t+" WHERE user_id = ? AND "+cond, args...).Error; err != nil {
			return err
		}
	}
	return nil
}

// dropLocksBelow drops the locks rooted strictly below p: what a MOVE or
// COPY deletes to make room at a destination p loses its locks, while the
// locks rooted at p itself stay and cover what replaces it (RFC 4918 §7.5,
// §9.8.4, §9.9.3).
func dropLocksBelow(tx *gorm.DB, userID, p string) error {
	c := "path"
	if models.IsPostgres(tx) {
		c = `path COLLATE "C"`
	}
	under := p + "/"
	if p == "/" {
		under = "/"
	}
	return tx.Exec("DELETE FROM dav_locks WHERE user_id = ? AND "+c+" > ? AND "+c+" < ?", userID, under, p+"0").Error
}

// moveMeta renames the properties and checksums of src (and below) to dst,
// and drops the locks rooted in src: RFC 4918 §9.9.4 says a MOVE does not
// move locks; the moved resources fall under dst's ancestors' locks.
func moveMeta(tx *gorm.DB, userID, src, dst string) error {
	cond, args := subtree(tx, "path", src)
	for _, t := range []string{"dav_props", "dav_checksums"} {
		a := append([]any{dst, utf8.RuneCountInString(src) + 1, userID}, args...)
		if err := tx.Exec("UPDATE "+t+" SET path = CAST(? AS TEXT) || substr(path, CAST(? AS INTEGER)) WHERE user_id = ? AND "+cond, a...).Error; err != nil {
			return err
		}
	}
	a := append([]any{userID}, args...)
	return tx.Exec("DELETE FROM dav_locks WHERE user_id = ? AND "+cond, a...).Error
}

// copyMeta copies the properties and checksums of src (and below when
// infinite) to dst. Checksums stay valid because copies keep the size and
// modification time.
func copyMeta(tx *gorm.DB, userID, src, dst string, infinite bool) error {
	cond, args := "path = ?", []any{src}
	if infinite {
		cond, args = subtree(tx, "path", src)
	}
	n := utf8.RuneCountInString(src) + 1
	a := append([]any{dst, n, userID}, args...)
	if err := tx.Exec("INSERT INTO dav_props (user_id, path, space, name, value, lang) SELECT user_id, CAST(? AS TEXT) || substr(path, CAST(? AS INTEGER)), space, name, value, lang FROM dav_props WHERE user_id = ? AND "+cond, a...).Error; err != nil {
		return err
	}
	return tx.Exec("INSERT INTO dav_checksums (user_id, path, size, mtime_ns, sha1, md5) SELECT user_id, CAST(? AS TEXT) || substr(path, CAST(? AS INTEGER)), size, mtime_ns, sha1, md5 FROM dav_checksums WHERE user_id = ? AND "+cond, a...).Error
}

// activeLocks returns the user's unexpired locks: a single indexed query
// that every write makes, so it runs as a statement prepared once rather
// than through gorm, whose per-call statement building cost as much as the
// lookup itself. Where the change counters are shared by every process on
// the database (SQLite), the answer is cached per user until the lock
// counter moves (gen.go), so a write to a tree nobody locked touches no
// table. Expired rows are swept now and then.
func (h *Handler) activeLocks(ctx context.Context, userID string) ([]models.DavLock, error) {
	var gen uint64
	var at time.Time
	if h.gen.shared {
		gen = h.gen.load(genLocks)
		if locks, ok := h.cachedLocks(userID, gen); ok {
			return locks, nil
		}
		at = time.Now()
	}
	stmt, err := h.lockStmt()
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("read locks: %w", err)
	}
	defer rows.Close()
	now := time.Now().Unix()
	var out []models.DavLock
	expired := false
	for rows.Next() {
		l := models.DavLock{UserID: userID}
		var owner sql.NullString
		if err := rows.Scan(&l.Token, &l.Path, &l.Infinite, &l.Shared, &owner, &l.TimeoutSeconds, &l.Expires); err != nil {
			return nil, fmt.Errorf("read locks: %w", err)
		}
		l.Owner = owner.String
		if l.Expires > now {
			out = append(out, l)
		} else {
			expired = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read locks: %w", err)
	}
	if expired {
		h.sweepLocks(ctx)
	}
	if h.gen.shared {
		size := 0
		for i := range out {
			size += len(out[i].Token) + len(out[i].Path) + len(out[i].Owner) + 64
		}
		if size <= maxCachedLockBytes {
			h.lockCache.Store(userID, lockCacheEntry{at: at, gen: gen, locks: append([]models.DavLock(nil), out...)})
		} else {
			h.lockCache.Delete(userID)
		}
	}
	return out, nil
}

// lockStmt prepares activeLocks' query on first use.
func (h *Handler) lockStmt() (*sql.Stmt, error) {
	h.stmtMu.Lock()
	defer h.stmtMu.Unlock()
	if h.locksStmt != nil {
		return h.locksStmt, nil
	}
	sqlDB, err := h.db.DB()
	if err != nil {
		return nil, fmt.Errorf("lock query: %w", err)
	}
	q := "SELECT token, path, infinite, shared, owner, timeout_seconds, expires FROM dav_locks WHERE user_id = ?"
	if models.IsPostgres(h.db) {
		q = strings.Replace(q, "?", "$1", 1)
	}
	// database/sql prepares it again on each pooled connection as needed.
	stmt, err := sqlDB.PrepareContext(context.Background(), q)
	if err != nil {
		return nil, fmt.Errorf("prepare lock query: %w", err)
	}
	h.locksStmt = stmt
	return stmt, nil
}

func (h *Handler) sweepLocks(ctx context.Context) {
	now := time.Now().Unix()
	last := h.sweep.Load()
	if now-last < 10 || !h.sweep.CompareAndSwap(last, now) {
		return
	}
	h.db.WithContext(ctx).Exec("DELETE FROM dav_locks WHERE expires <= ?", now)
	h.locksChanged()
}
