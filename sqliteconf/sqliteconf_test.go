package sqliteconf

import "testing"

// SQLite accepted the lookaside geometry: the package's init ran before
// any connection in this process initialised SQLite (sqlite3_config
// refuses after that, and the defaults would silently stay).
func TestLookasideConfigured(t *testing.T) {
	if Err != nil {
		t.Fatal(Err)
	}
}
