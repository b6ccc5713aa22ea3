// Package sqliteconf sets process-wide SQLite options of the pure-Go driver
// (modernc.org/sqlite) before the first connection opens. Importing it is
// enough; it holds no API.
//
// Why: that driver's C allocator (modernc.org/memory) maps every
// allocation above 16 KiB, and every emptied 64 KiB page, straight from the
// kernel and unmaps it on free. A prepared statement's program and
// registers are such allocations, and the drivers' callers here prepare
// per execution (the embedded Temporal server's SQLite store keeps no
// statements; its visibility REPLACE, with stored generated columns and
// full-text triggers, compiles to tens of KiB). Under load that was one
// mmap/munmap pair per statement, and munmap, which flushes the TLB of every
// core running the process, took ~10% of all CPU in the action engine's
// throughput benchmark. SQLite's per-connection lookaside allocator serves
// statement memory from a block the connection allocates once, so larger
// lookaside slots keep those allocations out of the kernel.
package sqliteconf

import (
	"fmt"
	"log/slog"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Lookaside geometry: slots of up to 64 KiB (SQLite's maximum) for
// statement programs, and enough of them for the statements a connection
// holds at once. The block is allocated per connection on open (1 MiB of
// address space; pages are touched only as slots are used).
const (
	lookasideSlot  = 65528
	lookasideSlots = 16
)

// Err is the result of configuring SQLite at start: nil, or why the
// defaults are in effect (sqlite3_config refuses once SQLite has been
// initialised, i.e. if a connection was opened before this package's init).
var Err error

func init() {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.NewVaList(int32(lookasideSlot), int32(lookasideSlots))
	defer libc.Xfree(tls, va)
	if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_LOOKASIDE, va); rc != sqlite3.SQLITE_OK {
		Err = fmt.Errorf("sqliteconf: sqlite3_config(SQLITE_CONFIG_LOOKASIDE) = %d", rc)
		slog.Warn("SQLite lookaside left at its default", "err", Err)
	}
}
