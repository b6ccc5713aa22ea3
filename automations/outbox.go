package automations

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// Outbox writes object changes as automation events in the transaction
// that commits them (engine.Events). The dispatcher reads them later; a
// crash between the commit and the dispatch leaves the event waiting,
// never lost. Other event sources (the WebDAV change log) write the same
// rows from their own commit.
type Outbox struct{}

// changeOf maps an edit's op to the event's change ("" for link edits,
// which fire no object trigger).
var changeOf = map[string]string{
	models.EditCreateObject: "created",
	models.EditUpdateObject: "updated",
	models.EditDeleteObject: "deleted",
}

// Record writes one event per object edit of ex, inside tx.
func (Outbox) Record(ctx context.Context, tx *gorm.DB, ex *models.Execution, edits []models.Edit) error {
	var rows []models.AutomationEvent
	for _, ed := range edits {
		change := changeOf[ed.Op]
		if change == "" {
			continue
		}
		// The event carries the execution's lineage: the firings its
		// chain took so far, which the dispatcher bounds.
		rows = append(rows, models.AutomationEvent{Source: models.EventSourceObject, Subject: ed.ObjectID,
			ExecutionID: ex.ID, ObjectTypeID: ed.ObjectTypeID, ObjectID: ed.ObjectID, Depth: ex.AutomationDepth,
			Change: change, Before: models.NewNumJSON(ed.Before), After: models.NewNumJSON(ed.After)})
	}
	if len(rows) == 0 {
		return nil
	}
	if err := tx.WithContext(ctx).Create(&rows).Error; err != nil {
		return fmt.Errorf("record %d automation events of execution %s: %w", len(rows), ex.ID, err)
	}
	return nil
}
