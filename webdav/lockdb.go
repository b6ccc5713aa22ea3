package webdav

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

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

// dropLocks drops the locks rooted at p and below: what is deleted loses
// its locks.
func dropLocks(tx *gorm.DB, userID, p string) error {
	return dropRows(tx, []string{"dav_locks"}, userID, p)
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

// withUserLock runs fn in a transaction serialised per user across every
// replica: SQLite transactions take the write lock up front (the DSN sets
// _txlock=immediate); Postgres takes a transaction advisory lock.
func (h *Handler) withUserLock(ctx context.Context, userID string, fn func(tx *gorm.DB) error) error {
	return h.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if models.IsPostgres(tx) {
			f := fnv.New64a()
			f.Write([]byte("webdav-lock:" + userID))
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", int64(f.Sum64())).Error; err != nil {
				return err
			}
		}
		return fn(tx)
	})
}

// userLocksTx reads every lock row of the user, expired ones included.
func userLocksTx(tx *gorm.DB, userID string) ([]models.DavLock, error) {
	var rows []models.DavLock
	if err := tx.Where("user_id = ?", userID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read locks: %w", err)
	}
	return rows, nil
}

// deleteLockTx drops the lock with token.
func deleteLockTx(tx *gorm.DB, token string) error {
	return tx.Where("token = ?", token).Delete(&models.DavLock{}).Error
}

// extendLock stores a refreshed lock's new timeout and expiry.
func (h *Handler) extendLock(ctx context.Context, l *models.DavLock) error {
	return h.db.WithContext(ctx).Model(&models.DavLock{}).Where("token = ?", l.Token).
		Updates(map[string]any{"timeout_seconds": l.TimeoutSeconds, "expires": l.Expires}).Error
}

// deleteUserLock drops the user's lock with token (UNLOCK).
func (h *Handler) deleteUserLock(ctx context.Context, userID, token string) error {
	return h.db.WithContext(ctx).Where("token = ? AND user_id = ?", token, userID).Delete(&models.DavLock{}).Error
}

// insertLockTx stores a new lock.
func insertLockTx(tx *gorm.DB, l *models.DavLock) error {
	if err := tx.Create(l).Error; err != nil {
		return fmt.Errorf("store lock: %w", err)
	}
	return nil
}
