package layers

import (
	"sort"
	"strings"
	"testing"
)

// gormUsers are the only packages whose non-test code may import gorm
// (gorm.io/...): the stores, which own SQL and its dialect differences,
// and what must hold a connection to build them (app, the benchmarks, the
// harnesses). Routes (api), pages (console) and the extension contracts
// call stores, so a new importer is a route or a kind reaching past its
// store. webdav/... is listed whole while its SQL moves into webdav's
// store packages.
var gormUsers = []string{
	"app",
	"auth",
	"automations",
	"cmd/actionbench",
	"cmd/davbench",
	"cmd/insightsbench",
	"cmd/ontobench",
	"engine",
	"execstore",
	"executions",
	"functions",
	"insights",
	"internal/harness/enginetest",
	"internal/harness/testdb",
	"models",
	"notifications",
	"notifications/recipients",
	"ontology",
	"revert",
	"secrets",
	"telemetry",
	"telemetry/storegauges",
	"users",
	"webdav/...",
	"whatif",
}

// TestOnlyStoresImportGorm fails when a package outside gormUsers imports
// gorm, and when a listed package no longer does (so the list shrinks as
// SQL moves behind stores, and cannot hide a package that came back).
func TestOnlyStoresImportGorm(t *testing.T) {
	used := map[string]bool{}
	for path, imports := range listImports(t) {
		rel, ok := relative(path)
		if !ok || !importsGorm(imports) {
			continue
		}
		pattern, allowed := gormPattern(rel)
		if !allowed {
			t.Errorf("%s imports gorm: call a store (a service of the package that owns the rows) instead", rel)
			continue
		}
		used[pattern] = true
	}
	var stale []string
	for _, p := range gormUsers {
		if !used[p] {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("listed as gorm importers but import no gorm: %v; remove them from gormUsers", stale)
	}
}

func importsGorm(imports []string) bool {
	for _, imp := range imports {
		if strings.HasPrefix(imp, "gorm.io/") {
			return true
		}
	}
	return false
}

// gormPattern returns the entry of gormUsers that admits path.
func gormPattern(path string) (string, bool) {
	for _, p := range gormUsers {
		dir, tree := strings.CutSuffix(p, "/...")
		if path == dir || (tree && strings.HasPrefix(path, dir+"/")) {
			return p, true
		}
	}
	return "", false
}
