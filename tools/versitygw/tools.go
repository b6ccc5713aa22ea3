//go:build tools

// Package tools pins the S3 server the tests and CI run (versitygw) in a
// module of its own, so that its dependencies never enter the product's
// go.mod. Build it with
//
//	cd tools/versitygw && go build -o BIN github.com/versity/versitygw/cmd/versitygw
//
// (.ci/run does this once and keeps the binary; see internal/harness/s3test).
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
