package webdav

import (
	"context"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/models"
)

// putMeta is the database work of one finished upload.
type putMeta struct {
	userID, path string
	// created: the path was new, so stale properties of an earlier
	// resource there are dropped.
	created bool
	// sum is the checksum to record, or nil to drop the recorded one
	// (the file is hashed in the background).
	sum  *models.DavChecksum
	done chan error
}

// maxCommitBatch bounds one group commit.
const maxCommitBatch = 64

// commitPut records an upload's metadata. Concurrent uploads share one
// transaction (group commit): on SQLite every write transaction takes the
// database's single write lock, and eight clients each committing their
// own would spend their time in SQLite's busy-wait sleeps.
func (s *dbStore) commitPut(ctx context.Context, m *putMeta) error {
	s.commitOnce.Do(func() {
		s.commitCh = make(chan *putMeta, maxCommitBatch)
		go s.commitLoop()
	})
	m.done = make(chan error, 1)
	select {
	case s.commitCh <- m:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Wait even if the client goes away: the file is already renamed and
	// its metadata must follow.
	return <-m.done
}

func (s *dbStore) commitLoop() {
	batch := make([]*putMeta, 0, maxCommitBatch)
	for first := range s.commitCh {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < maxCommitBatch {
			select {
			case m := <-s.commitCh:
				batch = append(batch, m)
			default:
				break drain
			}
		}
		err := s.db.Transaction(func(tx *gorm.DB) error {
			for _, m := range batch {
				if err := applyPut(tx, m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil && len(batch) > 1 {
			// One bad entry must not fail its neighbours: retry alone.
			for _, m := range batch {
				m.done <- s.db.Transaction(func(tx *gorm.DB) error { return applyPut(tx, m) })
			}
			continue
		}
		for _, m := range batch {
			m.done <- err
		}
	}
}

func applyPut(tx *gorm.DB, m *putMeta) error {
	if m.created {
		if err := dropPropsAt(tx, m.userID, m.path); err != nil {
			return err
		}
	}
	if m.sum == nil {
		return tx.Exec("DELETE FROM dav_checksums WHERE user_id = ? AND path = ?", m.userID, m.path).Error
	}
	return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(m.sum).Error
}
