//go:build !linux

package cputime

import "time"

// Tree reports false: only Linux's /proc tells of the children.
func Tree() (time.Duration, bool) { return 0, false }
