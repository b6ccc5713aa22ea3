package models

import "time"

// functionModels are the function packages, their versions and runs.
var functionModels = []any{&FunctionPackage{}, &FunctionVersion{}, &FunctionRun{}}

// FunctionPackage is a named, versioned function (package functions).
type FunctionPackage struct {
	ID          string `gorm:"primaryKey;size:36" json:"id"`
	Name        string `gorm:"uniqueIndex;size:128;not null" json:"name"`
	Description string `gorm:"size:1024" json:"description"`
	// Runtime is javascript or typescript.
	Runtime string `gorm:"size:32;not null" json:"runtime"`
	// Capabilities: network, timeout, memory_mib (functions.Capabilities).
	Capabilities JSON[map[string]any] `json:"capabilities"`
	CreatedBy    string               `gorm:"size:36" json:"created_by"`
	CreatedAt    time.Time            `json:"created_at"`
}

// FunctionVersion is one published version: immutable once stored.
type FunctionVersion struct {
	ID        string `gorm:"primaryKey;size:36" json:"id"`
	PackageID string `gorm:"size:36;not null;uniqueIndex:idx_function_version,priority:1" json:"package_id"`
	Version   string `gorm:"size:64;not null;uniqueIndex:idx_function_version,priority:2" json:"version"`
	// Source is what the author published; Code the compiled JavaScript
	// that runs (TypeScript is compiled once, at publish).
	Source    string    `gorm:"not null" json:"source,omitempty"`
	Code      string    `gorm:"not null" json:"-"`
	CreatedBy string    `gorm:"size:36" json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

// FunctionRun is one run of a function package's version (monitoring).
type FunctionRun struct {
	ID           string `gorm:"primaryKey;size:36" json:"id"`
	PackageID    string `gorm:"size:36;not null;index:idx_function_run_pkg,priority:1;index:idx_function_run_window,priority:2" json:"package_id"`
	Version      string `gorm:"size:64;not null;index:idx_function_run_window,priority:3" json:"version"`
	ActionTypeID string `gorm:"size:36" json:"action_type_id,omitempty"`
	ActionName   string `gorm:"size:128" json:"action_type,omitempty"`
	ExecutionID  string `gorm:"size:36;index" json:"execution_id,omitempty"`
	ActorID      string `gorm:"size:36;index:idx_function_run_window,priority:5" json:"actor_id,omitempty"`
	TargetID     string `gorm:"size:36" json:"target_object_id,omitempty"`
	// Kind is action, what-if or test.
	Kind       string `gorm:"size:16;not null" json:"kind"`
	Status     string `gorm:"size:16;not null;index:idx_function_run_window,priority:4" json:"status"`
	Reason     string `gorm:"size:32" json:"reason,omitempty"`
	Error      string `gorm:"size:4096" json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Console    string `json:"console,omitempty"`
	// idx_function_run_window covers the Insights page's count of a
	// window's runs per package, version and status (actor_id: the read
	// rule filters in the index).
	CreatedAt time.Time `gorm:"index:idx_function_run_pkg,priority:2;index:idx_function_run_window,priority:1" json:"created_at"`
	// Reads are the objects the run read (what its console and error may
	// quote): a reader other than the actor sees them only when it may
	// read the target and every one of these. Null on a record written
	// before they were kept: shown whole to its actor and admins only.
	Reads JSON[[]string] `json:"-"`
	// Redacted is set (never stored) when the reader may not see the
	// run's console, error and target.
	Redacted bool `gorm:"-" json:"redacted,omitempty"`
}
