package webdav

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// Blobs: every object the tree may reference has a dav_blobs row, made
// before its first byte is sent, except a small body's (backend_nodes_write.go,
// recordAfterBelow), whose row is inserted live by the node commit:
//
//	uploading --(node commit, same transaction)--> live
//	(no row, small body) --(node commit inserts it)--> live
//	live, referenced by no node --reclaim--> deleting --(object deleted)--> row gone
//	uploading, untouched for the grace period --sweep--> deleting --> gone
//
// Several nodes may share one live blob (COPY). A blob goes from live to
// deleting only in reclaim, which first takes the row (UPDATE), then
// counts the nodes referencing it in a later statement; a COPY takes the
// same rows (UPDATE ... WHERE state = 'live') before inserting nodes. So on
// Postgres (read committed) as on SQLite, a COPY sharing a blob and a
// reclaim of it are ordered by the row lock: either the COPY's nodes are
// seen and the blob stays, or the COPY finds it no longer live and starts
// over from the source's current node.

const (
	blobUploading = "uploading"
	blobLive      = "live"
	blobDeleting  = "deleting"
)

// newBlobKey names a fresh object: the user's id, then 128 random bits.
func newBlobKey(userID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return userID + "/" + hex.EncodeToString(b[:])
}

// blobs is the lifecycle of objects in a contents.Store.
type blobs struct {
	db       *gorm.DB
	contents contents.Store
	log      *slog.Logger
}

// begin records an upload about to start.
func (b *blobs) begin(ctx context.Context, userID, key string) error {
	err := b.db.WithContext(ctx).Create(&models.DavBlob{Key: key, UserID: userID, State: blobUploading, TouchedNs: time.Now().UnixNano()}).Error
	if err != nil {
		return fmt.Errorf("record upload: %w", err)
	}
	return nil
}

// hooks keep the upload's row alive and its multipart id known.
func (b *blobs) hooks(key string) contents.PutHooks {
	return contents.PutHooks{
		Started: func(ctx context.Context, id string) error {
			return b.db.WithContext(context.WithoutCancel(ctx)).Exec("UPDATE dav_blobs SET upload_id = ?, touched_ns = ? WHERE blob_key = ?", id, time.Now().UnixNano(), key).Error
		},
		Touch: func(ctx context.Context) error {
			return b.db.WithContext(context.WithoutCancel(ctx)).Exec("UPDATE dav_blobs SET touched_ns = ? WHERE blob_key = ?", time.Now().UnixNano(), key).Error
		},
	}
}

// goLiveTx makes an uploaded blob live, in the node commit's transaction.
func goLiveTx(tx *gorm.DB, key string, size int64) error {
	res := tx.Exec("UPDATE dav_blobs SET state = ?, size = ?, upload_id = '', touched_ns = ? WHERE blob_key = ? AND state = ?",
		blobLive, size, time.Now().UnixNano(), key, blobUploading)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return errors.New("the upload's record was swept before its commit")
	}
	return nil
}

// recordLiveTx records a blob written before any row (a small body) as
// live, in the node commit's transaction.
func recordLiveTx(tx *gorm.DB, userID, key string, size int64) error {
	err := tx.Create(&models.DavBlob{Key: key, UserID: userID, State: blobLive, Size: size, TouchedNs: time.Now().UnixNano()}).Error
	if err != nil {
		return fmt.Errorf("record upload: %w", err)
	}
	return nil
}

// shareTx takes the rows of blobs a COPY is about to reference; false when
// one of them is no longer live (reclaimed meanwhile: retry from the
// source's current nodes).
func shareTx(tx *gorm.DB, keys []string) (bool, error) {
	if len(keys) == 0 {
		return true, nil
	}
	res := tx.Exec("UPDATE dav_blobs SET touched_ns = ? WHERE blob_key IN ? AND state = ?", time.Now().UnixNano(), keys, blobLive)
	if res.Error != nil {
		return false, res.Error
	}
	return res.RowsAffected == int64(len(keys)), nil
}

// abandon drops a blob whose upload failed or lost its commit.
func (b *blobs) abandon(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := b.contents.Delete(ctx, key); err != nil {
		// The row stays "uploading": the sweep deletes it later.
		b.log.Warn("webdav: delete abandoned upload (the sweep will retry)", "key", key, "err", err)
		return
	}
	b.db.WithContext(ctx).Exec("DELETE FROM dav_blobs WHERE blob_key = ? AND state = ?", key, blobUploading)
}

// reclaim deletes a live blob no node references any more; it reports
// whether it did. Safe with concurrent COPYs and other reclaimers.
func (b *blobs) reclaim(ctx context.Context, key string) (bool, error) {
	if key == "" {
		return false, nil
	}
	claimed := false
	err := b.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE dav_blobs SET state = ?, touched_ns = ? WHERE blob_key = ? AND state = ?", blobDeleting, time.Now().UnixNano(), key, blobLive)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		var refs int64
		if err := tx.Raw("SELECT COUNT(*) FROM dav_nodes WHERE blob_key = ?", key).Scan(&refs).Error; err != nil {
			return err
		}
		if refs > 0 {
			return errStillReferenced
		}
		claimed = true
		return nil
	})
	if errors.Is(err, errStillReferenced) {
		return false, nil
	}
	if err != nil || !claimed {
		return false, err
	}
	return true, b.finish(ctx, key)
}

var errStillReferenced = errors.New("blob still referenced")

// finish deletes a claimed blob's object, then its row.
func (b *blobs) finish(ctx context.Context, key string) error {
	if err := b.contents.Delete(ctx, key); err != nil {
		return fmt.Errorf("delete object: %w", err)
	}
	return b.db.WithContext(ctx).Exec("DELETE FROM dav_blobs WHERE blob_key = ? AND state = ?", key, blobDeleting).Error
}

// ---- the sweep's queries (sweep.go) ----

// staleUploads lists up to limit uploads untouched since cutoff.
func (b *blobs) staleUploads(ctx context.Context, cutoff int64, limit int) ([]models.DavBlob, error) {
	var rows []models.DavBlob
	if err := b.db.WithContext(ctx).Where("state = ? AND touched_ns < ?", blobUploading, cutoff).Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list abandoned uploads: %w", err)
	}
	return rows, nil
}

// claimStaleUpload marks an upload untouched since cutoff as being
// deleted, reporting false when it was touched again or another replica
// claimed it first.
func (b *blobs) claimStaleUpload(ctx context.Context, key string, cutoff int64) (bool, error) {
	res := b.db.WithContext(ctx).Exec("UPDATE dav_blobs SET state = ?, touched_ns = ? WHERE blob_key = ? AND state = ? AND touched_ns < ?",
		blobDeleting, time.Now().UnixNano(), key, blobUploading, cutoff)
	if res.Error != nil {
		return false, fmt.Errorf("claim upload: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// unreferenced lists up to limit live objects no node refers to.
func (b *blobs) unreferenced(ctx context.Context, limit int) ([]string, error) {
	var keys []string
	err := b.db.WithContext(ctx).Raw("SELECT b.blob_key FROM dav_blobs b WHERE b.state = ? AND NOT EXISTS (SELECT 1 FROM dav_nodes n WHERE n.blob_key = b.blob_key) LIMIT ?",
		blobLive, limit).Scan(&keys).Error
	if err != nil {
		return nil, fmt.Errorf("list unreferenced objects: %w", err)
	}
	return keys, nil
}

// staleDeletions lists up to limit objects claimed for deletion before
// cutoff and never finished.
func (b *blobs) staleDeletions(ctx context.Context, cutoff int64, limit int) ([]string, error) {
	var keys []string
	err := b.db.WithContext(ctx).Raw("SELECT blob_key FROM dav_blobs WHERE state = ? AND touched_ns < ? LIMIT ?", blobDeleting, cutoff, limit).Scan(&keys).Error
	if err != nil {
		return nil, fmt.Errorf("list half-reclaimed objects: %w", err)
	}
	return keys, nil
}

// lookup reads the row of key: none or one.
func (b *blobs) lookup(ctx context.Context, key string) ([]models.DavBlob, error) {
	var rows []models.DavBlob
	if err := b.db.WithContext(ctx).Where("blob_key = ?", key).Limit(1).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("look up object: %w", err)
	}
	return rows, nil
}
