package models

import "time"

// rollupModels are the action log's aggregates.
var rollupModels = []any{&ExecutionRollup{}, &DataMigration{}}

// ExecutionRollup counts the executions created in one hour of one action
// type by one actor that are now in one status with one error code, so a
// window's counts read a few rows per hour instead of every execution.
// execstore keeps it, in the transaction of every row create and status
// change; ExampleID is the greatest id ever counted into the bucket (for
// a failed bucket, which rows never leave, the greatest id in it).
type ExecutionRollup struct {
	Hour         time.Time `gorm:"primaryKey;autoIncrement:false;index:idx_rollup_actor,priority:2"`
	ActionTypeID string    `gorm:"primaryKey;size:36"`
	ActorID      string    `gorm:"primaryKey;size:36;index:idx_rollup_actor,priority:1"`
	Status       string    `gorm:"primaryKey;size:32"`
	ErrorCode    string    `gorm:"primaryKey;size:64"`
	N            int64     `gorm:"not null;default:0"`
	ExampleID    string    `gorm:"size:36;not null;default:''"`
}

// DataMigration records a one-time data migration as done (by name), so
// a start runs it once however many replicas start.
type DataMigration struct {
	Name   string `gorm:"primaryKey;size:64"`
	DoneAt time.Time
}
