//go:build !linux

// Command davbench compares Ontoflow's WebDAV with Apache mod_dav; it reads
// processes' CPU and memory from /proc and drives Debian's Apache, so it
// runs on Linux only (this stub keeps `go build ./...` and `go vet ./...`
// passing on macOS and Windows).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "davbench runs on Linux only: it reads /proc and drives Apache mod_dav")
	os.Exit(2)
}
