//go:build !windows

package main

import "syscall"

// terminate asks a process to stop gracefully.
var terminate = syscall.SIGTERM
