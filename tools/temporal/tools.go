//go:build tools

// Package tools pins the Temporal server that the production-shape benchmark
// (cmd/prodbench) runs as a process of its own, and its SQL schema tool, in a
// module of their own so that nothing here enters the product's go.mod. The
// version is the one the product's go.mod already uses (go.temporal.io/server
// v1.32.1), so the server the benchmark runs is the one the product embeds.
// Build both with scripts/temporal-tools, which keeps them in GOPATH/bin
// with a stamp and rebuilds only when this module or the Go version changes
// (a cold build takes about ten minutes on two cores).
package tools

import (
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
