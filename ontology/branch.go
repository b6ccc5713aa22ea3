package ontology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
)

// Branch returns what-if branch id for u: its owner, or an admin. A branch
// of someone else, or one past its expiry, is answered exactly as a
// missing one (404 BranchNotFound), so branch ids cannot be probed.
func (s *Store) Branch(ctx context.Context, u *models.User, id string) (*models.Branch, error) {
	var b models.Branch
	err := s.db.WithContext(ctx).Take(&b, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && !MayUseBranch(u, &b)) {
		return nil, apperr.New(apperr.BranchNotFound, "branch %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read branch %s: %w", id, err)
	}
	return &b, nil
}

// MayUseBranch is the branch rule: private to its owner (admins see all)
// until it expires.
func MayUseBranch(u *models.User, b *models.Branch) bool {
	if u == nil || !time.Now().Before(b.ExpiresAt) {
		return false
	}
	return b.OwnerID == u.ID || u.IsAdmin()
}

// BranchSteps lists a branch's steps in order, read through db (nil: the
// store's handle).
func (s *Store) BranchSteps(ctx context.Context, db *gorm.DB, branchID string) ([]models.BranchStep, error) {
	var steps []models.BranchStep
	if err := s.conn(ctx, db).Where("branch_id = ?", branchID).Order("position").Find(&steps).Error; err != nil {
		return nil, fmt.Errorf("read the steps of branch %s: %w", branchID, err)
	}
	return steps, nil
}

// BranchEdits are the edits of steps, in order.
func BranchEdits(steps []models.BranchStep) []models.Edit {
	var out []models.Edit
	for _, st := range steps {
		out = append(out, st.Edits.V...)
	}
	return out
}

// ReplayEdits re-applies recorded branch edits inside tx, in order, over
// the ontology as it is now: objects created in the branch keep their ids
// (later edits name them), updates write their after values. The caller
// rolls tx back; nothing here is meant to commit.
func (s *Store) ReplayEdits(ctx context.Context, tx *gorm.DB, edits []models.Edit) error {
	for i, ed := range mergeUpdates(edits) {
		if err := s.replay(ctx, tx, ed); err != nil {
			return apperr.New(apperr.Conflict, "the branch's edit %d (%s of %s) no longer applies over the ontology: %s",
				i+1, ed.Op, ed.ObjectID+ed.LinkID, apperr.MessageOf(err))
		}
	}
	return nil
}

// mergeUpdates folds adjacent updates of one object into one write:
// nothing happens between them, so the object ends the same, and a branch
// that stacks many edits of one object replays in one write (each costs a
// few statements while the transaction holds SQLite's write lock).
func mergeUpdates(edits []models.Edit) []models.Edit {
	out := make([]models.Edit, 0, len(edits))
	for _, ed := range edits {
		n := len(out)
		if n > 0 && ed.Op == models.EditUpdateObject && out[n-1].Op == models.EditUpdateObject && out[n-1].ObjectID == ed.ObjectID {
			merged := make(map[string]any, len(out[n-1].After)+len(ed.After))
			for k, v := range out[n-1].After {
				merged[k] = v
			}
			for k, v := range ed.After {
				merged[k] = v
			}
			out[n-1].After = merged
			continue
		}
		out = append(out, ed)
	}
	return out
}

func (s *Store) replay(ctx context.Context, tx *gorm.DB, ed models.Edit) error {
	switch ed.Op {
	case models.EditUpdateObject:
		_, err := s.UpdateObject(ctx, tx, ed.ObjectID, ed.After)
		return err
	case models.EditCreateObject:
		return s.RestoreObject(ctx, tx, ed.CreatedObject())
	case models.EditDeleteObject:
		_, _, err := s.DeleteObject(ctx, tx, ed.ObjectID)
		return err
	case models.EditCreateLink:
		return s.RestoreLink(ctx, tx, ed.CreatedLink())
	case models.EditDeleteLink:
		return s.DeleteLink(ctx, tx, ed.LinkID)
	}
	return fmt.Errorf("unknown edit %q", ed.Op)
}

// errRollback ends a branch read's transaction: a branch is never written
// to the ontology.
var errRollback = errors.New("branch view: roll back")

// InBranch runs fn over the ontology as branch id (u's) shows it: the
// branch's edits replayed in a transaction that fn reads through (a store
// whose handle is that transaction) and that is then rolled back. On
// SQLite the transaction holds the database's write lock while it runs,
// so fn should be one read.
func (s *Store) InBranch(ctx context.Context, u *models.User, id string, fn func(s *Store) error) error {
	if _, err := s.Branch(ctx, u, id); err != nil {
		return err
	}
	var steps []models.BranchStep
	err := s.db.WithContext(ctx).Select("position", "edits").Where("branch_id = ?", id).Order("position").Find(&steps).Error
	if err != nil {
		return fmt.Errorf("read the edits of branch %s: %w", id, err)
	}
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := s.ReplayEdits(ctx, tx, BranchEdits(steps)); err != nil {
			return err
		}
		c := *s
		c.db = tx
		if err := fn(&c); err != nil {
			return err
		}
		return errRollback
	})
	if errors.Is(err, errRollback) {
		return nil
	}
	return err
}
