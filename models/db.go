// Package models holds Ontoflow's persistent records (gorm) and the code that
// opens and migrates the database. The same schema runs on SQLite (the
// embedded default) and Postgres (production).
package models

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	// The pure-Go SQLite driver, registered as "sqlite". The embedded
	// Temporal server links the same one, so the binary has one driver and
	// needs no cgo.
	_ "modernc.org/sqlite"

	// SQLite's process-wide options, set before the first connection.
	_ "github.com/ontoflow/ontoflow/sqliteconf"
)

// Dialect names the database family behind a *gorm.DB.
func Dialect(db *gorm.DB) string { return db.Dialector.Name() }

// IsPostgres reports whether db is Postgres.
func IsPostgres(db *gorm.DB) bool { return Dialect(db) == "postgres" }

// Open opens the database named by dsn: "postgres://..." (or
// "postgresql://...", or a key=value Postgres DSN containing "host="), or
// "sqlite:PATH" / a plain file path for SQLite.
func Open(ctx context.Context, dsn string) (*gorm.DB, error) {
	cfg := &gorm.Config{
		Logger:                                   logger.Discard,
		DisableForeignKeyConstraintWhenMigrating: true,
		TranslateError:                           true,
		PrepareStmt:                              true,
		// Microseconds: what Postgres keeps, so a time read back equals
		// the one written (edits record objects' update times).
		NowFunc: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
	}
	var (
		db  *gorm.DB
		err error
	)
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"), strings.Contains(dsn, "host="):
		pool, perr := openPostgres(dsn)
		if perr != nil {
			return nil, perr
		}
		db, err = gorm.Open(postgres.New(postgres.Config{Conn: pool}), cfg)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		sqlDB := pool.DB
		sqlDB.SetMaxOpenConns(32)
		sqlDB.SetMaxIdleConns(16)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	default:
		path := strings.TrimPrefix(dsn, "sqlite:")
		path = strings.TrimPrefix(path, "//")
		if path != ":memory:" {
			if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
				return nil, fmt.Errorf("create database directory: %w", err)
			}
		}
		// The pure-Go modernc driver is already registered as "sqlite" by the
		// embedded Temporal server; reusing it keeps the binary cgo-free.
		// WAL + busy_timeout lets readers run beside the single writer;
		// foreign keys stay off because the schema enforces relations in code
		// identically on both dialects. A page cache of 32 MiB per connection
		// (SQLite's default is 2 MiB) keeps the interior pages of the
		// objects' and the index's B-trees in memory at a million objects,
		// so a lookup reads its leaf rather than its whole path from the
		// file; four connections bound it at 128 MiB.
		q := "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(OFF)&_pragma=cache_size(-32768)&_txlock=immediate"
		sqlDB, err := sql.Open("sqlite", "file:"+path+q)
		if err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		d := sqlite.New(sqlite.Config{DriverName: "sqlite", Conn: newWriterPool(sqlDB, 10*time.Second)}).(*sqlite.Dialector)
		db, err = gorm.Open(sqliteDialector{d}, cfg)
		if err != nil {
			sqlDB.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		// One writer at a time is SQLite's rule; a small pool serves reads.
		sqlDB.SetMaxOpenConns(4)
		// Keep all four open: with the default of two idle, connections three
		// and four were closed and reopened under load.
		sqlDB.SetMaxIdleConns(4)
	}
	if err := ping(ctx, db); err != nil {
		return nil, err
	}
	return db, nil
}

// sessionDefaults are the Postgres settings of Ontoflow's connections,
// each kept where the DSN sets it (e.g. ?plan_cache_mode=auto).
//
// plan_cache_mode: statements are prepared (PrepareStmt), and after five
// executions Postgres may keep a generic plan, blind to the values; the
// query path's best plan depends on how many objects a value selects,
// and a generic plan of two filters read a 1% key's every index row (190
// ms instead of 2.8 ms for a page at 100,000 objects). Planning each
// execution costs tens of microseconds.
//
// max_parallel_workers_per_gather: statements here read a page, and a
// parallel plan (chosen when an estimate is far too low: 19,000 objects
// for a key of 500,000) starts two workers that each read past the page:
// 11 ms instead of 2 ms for two filters at a million objects.
//
// jit: a statement whose estimated cost is high (a window of 20,000
// objects, of which it reads a few thousand before its page is full)
// was compiled first: 132 ms of JIT for 4 ms of execution.
var sessionDefaults = map[string]string{"plan_cache_mode": "force_custom_plan", "max_parallel_workers_per_gather": "0", "jit": "off"}

func sessionSettings(_ context.Context, c *pgx.ConnConfig) error {
	for k, v := range sessionDefaults {
		if _, set := c.RuntimeParams[k]; !set {
			c.RuntimeParams[k] = v
		}
	}
	return nil
}

// sqliteDialector translates the modernc driver's constraint errors, which
// gorm's SQLite dialector (written for the cgo driver's error type) misses,
// so a duplicate key is gorm.ErrDuplicatedKey on SQLite as on Postgres.
type sqliteDialector struct{ *sqlite.Dialector }

// Translate implements gorm.ErrorTranslator.
func (d sqliteDialector) Translate(err error) error {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() {
		case 1555, 2067: // SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_UNIQUE
			return gorm.ErrDuplicatedKey
		case 787: // SQLITE_CONSTRAINT_FOREIGNKEY
			return gorm.ErrForeignKeyViolated
		}
	}
	return err
}

func ping(ctx context.Context, db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

// Ping checks that the database answers (used by /readyz).
func Ping(ctx context.Context, db *gorm.DB) error { return ping(ctx, db) }

// all lists every record type of db's dialect; each area of the schema
// declares its own list in its own file.
func all(db *gorm.DB) []any {
	var out []any
	for _, group := range [][]any{userModels, davModels, ontologyModels, actionModels, rollupModels, secretModels, branchModels, functionModels, objectValueModels, automationModels, countModels} {
		out = append(out, group...)
	}
	return append(out, textModels(db)...)
}

// migrationLockClass is the first half of the Postgres advisory lock that
// serialises migrations when several replicas start at once; the second
// half is the hash of the schema being migrated, so replicas of one
// deployment take turns while deployments (or test databases) in other
// schemas of the same database do not wait for each other.
const migrationLockClass = 0x6f6e746f // "onto"

// unlockTimeout bounds the release of the migration lock, which runs even
// when the migration's context has ended: a release that cannot finish
// in it closes the connection instead, which releases the lock too.
const unlockTimeout = 10 * time.Second

// Migrate brings the schema up to date and records SchemaVersion; it
// refuses (*SchemaTooNewError) a database whose recorded version is newer,
// before changing anything. A database without a recorded version is
// taken for version 1 and migrated in place. Every run also checks the
// models' indexes against the database's catalog and repairs them
// (repairIndexes). It is idempotent, and safe when several replicas run
// it at once: on Postgres it holds an advisory lock for the duration.
func Migrate(ctx context.Context, db *gorm.DB) error {
	start := time.Now()
	if IsPostgres(db) {
		unlock, err := lockMigrations(ctx, db)
		if err != nil {
			return fmt.Errorf("migrate database: %w", err)
		}
		defer unlock()
	}
	var from int
	err := db.WithContext(ctx).Connection(func(conn *gorm.DB) error {
		var err error
		from, err = migrateVersioned(ctx, conn, func(tables bool) error {
			rebuild, err := prepareObjectValues(conn)
			if err != nil {
				return err
			}
			// Recreated index tables get the models' indexes from
			// AutoMigrate too.
			if tables || rebuild {
				if err := conn.AutoMigrate(all(conn)...); err != nil {
					return fmt.Errorf("auto-migrate: %w", err)
				}
			}
			// Also when the recorded fingerprint matches: an older binary
			// started on this database may have dropped indexes (or made
			// obsolete ones again) without recording anything.
			if err := repairIndexes(ctx, conn); err != nil {
				return err
			}
			if err := buildObjectValues(ctx, conn); err != nil {
				return err
			}
			return buildCounts(ctx, conn, rebuild)
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate database: %w", err)
	}
	lvl := slog.LevelDebug
	if from != 0 && from != SchemaVersion {
		lvl = slog.LevelInfo // an upgrade in place is worth a line
	}
	slog.Log(ctx, lvl, "database migrated", "dialect", Dialect(db), "from_version", from, "to_version", SchemaVersion, "took", time.Since(start))
	return nil
}

// lockMigrations takes the Postgres migration lock on a connection of
// its own, held until the returned release. A session advisory lock
// belongs to the connection that took it, and the gorm handle a migration
// runs on does not stay on one connection: gorm swaps its statement's
// connection for the pool along the way (AutoMigrate, prepared
// statements), so an unlock sent through it reached another connection,
// released nothing, and left the lock with an idle pooled connection for
// the rest of the process's life: a second process on the database waited
// forever (issue 45). A *sql.Conn is one connection until closed.
func lockMigrations(ctx context.Context, db *gorm.DB) (release func(), err error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("take migration lock: connect: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1, hashtext(current_schema()))", int32(migrationLockClass)); err != nil {
		// A wait cut short may still have been granted at the server;
		// closing the session is the only sure release.
		discardConn(conn)
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		var released bool
		err := conn.QueryRowContext(uctx, "SELECT pg_advisory_unlock($1, hashtext(current_schema()))", int32(migrationLockClass)).Scan(&released)
		if err != nil || !released {
			slog.WarnContext(ctx, "migration lock not released by unlock; closing its connection instead", "released", released, "err", err)
			discardConn(conn)
			return
		}
		conn.Close()
	}, nil
}

// discardConn closes conn's session instead of returning it to the pool,
// so that a session lock it may hold ends with it.
func discardConn(conn *sql.Conn) {
	// driver.ErrBadConn from Raw makes database/sql close the connection
	// when it is released.
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}
