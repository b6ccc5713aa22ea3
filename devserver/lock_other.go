//go:build !unix

package devserver

// lockFile is a no-op where flock is not available.
func lockFile(string) (func(), error) { return func() {}, nil }
