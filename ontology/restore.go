package ontology

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// objectLinks are the links of object id, either end, by id.
func objectLinks(ctx context.Context, tx *gorm.DB, id string) ([]domain.Link, error) {
	var ls []models.Link
	if err := tx.WithContext(ctx).Where("source_id = ? OR target_id = ?", id, id).Order("id").Find(&ls).Error; err != nil {
		return nil, fmt.Errorf("read links of %s: %w", id, err)
	}
	out := make([]domain.Link, 0, len(ls))
	for _, l := range ls {
		out = append(out, domain.Link{ID: l.ID, LinkTypeID: l.LinkTypeID, SourceID: l.SourceID, TargetID: l.TargetID,
			Properties: l.Properties.V, CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt})
	}
	return out, nil
}

// linkWhere reads the one link the condition names, in tx (nil: the
// store's handle); nil, nil when there is none.
func (s *Store) linkWhere(ctx context.Context, tx *gorm.DB, cond string, args ...any) (*domain.Link, error) {
	if tx == nil {
		tx = s.db
	}
	var ls []models.Link
	if err := tx.WithContext(ctx).Where(cond, args...).Limit(1).Find(&ls).Error; err != nil {
		return nil, fmt.Errorf("read link: %w", err)
	}
	if len(ls) == 0 {
		return nil, nil
	}
	l := ls[0]
	return &domain.Link{ID: l.ID, LinkTypeID: l.LinkTypeID, SourceID: l.SourceID, TargetID: l.TargetID,
		Properties: l.Properties.V, CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt}, nil
}

// RestoreObject recreates a deleted object exactly as o describes it: its
// id, properties, marking, organization, creator and times (what undoing a
// delete_object edit needs). The properties are checked against the
// object type as it is now, no defaults are added, and unique values are
// claimed; an object with the id already existing is a Conflict.
func (s *Store) RestoreObject(ctx context.Context, tx *gorm.DB, o domain.Object) error {
	return s.inTx(ctx, tx, func(tx *gorm.DB) error {
		if old, err := s.loadObject(ctx, tx, o.ID); err != nil {
			return err
		} else if old != nil || !domain.IsUUID(o.ID) {
			return apperr.New(apperr.Conflict, "object %q exists (or is no object id); it cannot be recreated", o.ID)
		}
		ts, err := loadTypeState(ctx, tx, o.ObjectTypeID)
		if err != nil {
			return err
		}
		if err := s.checkMarking(o.Marking); err != nil {
			return err
		}
		props, err := s.prepareProps(ctx, tx, ts, nil, o.Properties, false, false)
		if err != nil {
			return err
		}
		if err := s.syncUnique(ctx, tx, ts, o.ID, nil, props); err != nil {
			return err
		}
		m := &models.Object{ID: o.ID, ObjectTypeID: ts.ot.ID, Properties: models.NewNumJSON(props), Marking: o.Marking,
			CreatedBy: o.CreatedBy, Organization: o.Organization, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
		if err := tx.Create(m).Error; err != nil {
			return fmt.Errorf("recreate object %s: %w", o.ID, err)
		}
		if err := models.CountObjects(ctx, tx, ts.ot.ID, 1); err != nil {
			return err
		}
		return s.indexObject(ctx, tx, ts, m, true)
	})
}

// RestoreLink recreates a deleted link exactly as l describes it (id,
// ends, properties, creator, time), checking its ends and cardinality as
// any new link.
func (s *Store) RestoreLink(ctx context.Context, tx *gorm.DB, l domain.Link) error {
	return s.inTx(ctx, tx, func(tx *gorm.DB) error {
		if !domain.IsUUID(l.ID) {
			return apperr.New(apperr.InvalidArgument, "link id %q is not a UUID", l.ID)
		}
		lt, err := findLinkType(ctx, tx, l.LinkTypeID)
		if err != nil {
			return err
		}
		for _, end := range []struct{ id, typeID string }{{l.SourceID, lt.SourceObjectTypeID}, {l.TargetID, lt.TargetObjectTypeID}} {
			if ok, err := s.objectExists(ctx, tx, end.typeID, end.id); err != nil {
				return err
			} else if !ok {
				return apperr.New(apperr.ObjectNotFound, "object %q of type %s does not exist; the link cannot be recreated", end.id, end.typeID)
			}
		}
		m := &models.Link{ID: l.ID, LinkTypeID: lt.ID, SourceID: l.SourceID, TargetID: l.TargetID,
			Properties: models.NewNumJSON(l.Properties), CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt}
		if m.Properties.V == nil {
			m.Properties.V = map[string]any{}
		}
		m.SourceSlot, m.TargetSlot = slots(lt.Cardinality, m.ID, m.SourceID, m.TargetID)
		if err := tx.Create(m).Error; err != nil {
			if isUnique(err) {
				return apperr.New(apperr.CardinalityViolation, "link %s cannot be recreated: it would break link type %s's cardinality (or exists)", l.ID, lt.Name)
			}
			return fmt.Errorf("recreate link %s: %w", l.ID, err)
		}
		return nil
	})
}

// LockObject locks the object's row until tx ends (Postgres: SELECT ...
// FOR UPDATE; SQLite runs one write transaction at a time).
func (s *Store) LockObject(ctx context.Context, tx *gorm.DB, id string) error {
	if !models.IsPostgres(tx) {
		return nil
	}
	var ids []string
	err := tx.WithContext(ctx).Model(&models.Object{}).Clauses(clause.Locking{Strength: "UPDATE"}).
		Where("id = ?", id).Pluck("id", &ids).Error
	if err != nil {
		return fmt.Errorf("lock object %s: %w", id, err)
	}
	return nil
}

// SetUpdatedAt sets the object's update time (revert; see
// engine.Ontology).
func (s *Store) SetUpdatedAt(ctx context.Context, tx *gorm.DB, id string, at time.Time) error {
	err := tx.WithContext(ctx).Model(&models.Object{}).Where("id = ?", id).
		Update("updated_at", at.UTC().Truncate(time.Microsecond)).Error
	if err != nil {
		return fmt.Errorf("restore the update time of object %s: %w", id, err)
	}
	return nil
}
