package devserver

import (
	"database/sql"
	"fmt"
	"strings"
)

// keptVisibilityIndexes are the indexes of Temporal's SQLite visibility
// table that the embedded server keeps: those behind the UI's default
// listing and its built-in filters (status, type, id, time, task queue,
// parent and root), and the first keywordIndexes custom keyword columns,
// which hold the engine's search attributes.
var keptVisibilityIndexes = map[string]bool{
	"default_idx": true, "by_execution_time": true, "by_workflow_id": true, "by_workflow_type": true,
	"by_status": true, "by_task_queue": true, "by_parent_workflow_id": true, "by_parent_run_id": true,
	"by_root_workflow_id": true, "by_root_run_id": true,
}

const keywordIndexes = 8

// trimVisibilityIndexes drops the other indexes from a new visibility
// database. The schema indexes every predefined and custom search
// attribute column (58 indexes, each keyed on an expression), so every
// start and close of a workflow updated all of them, twice for a close
// (REPLACE is a delete and an insert), although the columns are NULL for
// every workflow here. Queries on a column without an index stay correct;
// they scan the namespace's rows, which is what a dev server holds.
func trimVisibilityIndexes(path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return fmt.Errorf("devserver: open visibility database: %w", err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL")
	if err != nil {
		return fmt.Errorf("devserver: list visibility indexes: %w", err)
	}
	var drop []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("devserver: list visibility indexes: %w", err)
		}
		if !keepVisibilityIndex(name) {
			drop = append(drop, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("devserver: list visibility indexes: %w", err)
	}
	for _, name := range drop {
		if _, err := db.Exec(`DROP INDEX "` + strings.ReplaceAll(name, `"`, `""`) + `"`); err != nil {
			return fmt.Errorf("devserver: drop visibility index %s: %w", name, err)
		}
	}
	return nil
}

func keepVisibilityIndex(name string) bool {
	if keptVisibilityIndexes[name] {
		return true
	}
	var n int
	if _, err := fmt.Sscanf(name, "by_keyword_%d", &n); err == nil && strings.HasPrefix(name, "by_keyword_") {
		return n <= keywordIndexes
	}
	return false
}
