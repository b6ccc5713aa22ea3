// Package writers holds the shapes of writes the owner test must find
// (each marked with a want comment) and of calls it must leave alone.
package writers

import (
	"context"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/models"
)

type service struct {
	db    *gorm.DB
	execs *execstore.Store
}

func newExecution() *models.Execution { return &models.Execution{ID: "x"} }

const table = "executions"

func (s *service) writes(ctx context.Context, tx *gorm.DB) {
	ex := newExecution()
	s.db.WithContext(ctx).Create(ex) // want
	var rows []models.Execution
	tx.CreateInBatches(rows, 500)                                                                    // want
	tx.Select("status").Save(ex)                                                                     // want
	s.db.Model(&models.Execution{}).Where("id = ?", "x").Updates(map[string]any{"status": "failed"}) // want
	s.db.Model(ex).Update("reverted_by", "y")                                                        // want
	s.db.Table("executions").Where("id = ?", "x").Update("status", "failed")                         // want
	s.db.Table(table+" AS e").UpdateColumn("status", "failed")                                       // want
	s.db.Exec("UPDATE executions SET status = ? WHERE id = ?", "failed", "x")                        // want
	s.db.Exec("DELETE FROM "+"executions WHERE id = ?", "x")                                         // want
	s.db.Where("id = ?", "x").Delete(&models.Execution{})                                            // want
	(s.db).Clauses().Save(&rows)                                                                     // want
}

func (s *service) leftAlone(ctx context.Context, tx *gorm.DB) {
	ex := newExecution()
	s.execs.Create(ctx, ex)
	_ = s.db.WithContext(ctx).Take(ex, "id = ?", "x")
	s.db.Model(&models.Execution{}).Where("id = ?", "x").Count(nil)
	tx.Create(&models.Notification{ID: "n", ExecutionID: ex.ID})
	s.db.Model(&models.Branch{}).Where("id IN (SELECT branch_id FROM executions)").Update("steps", 0)
	s.db.Exec("DELETE FROM dav_props WHERE path = ?", "executions")
	s.db.Raw("SELECT * FROM executions").Scan(&ex)
}
