package models

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// IsNotFound reports whether err says a looked-up record does not exist,
// so that callers above the stores (the API's error rendering) need not
// know the errors of the database library.
func IsNotFound(err error) bool { return errors.Is(err, gorm.ErrRecordNotFound) }

// IsDuplicate reports whether err is a unique constraint refusing a row.
func IsDuplicate(err error) bool { return errors.Is(err, gorm.ErrDuplicatedKey) }

// IsUnreachable reports whether err says the database could not be reached
// or the connection was lost mid-statement (refused, reset, timed out,
// closed, the server shutting down): a condition that passes, where the
// caller should be told to retry rather than shown an internal error.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var connect *pgconn.ConnectError
	var netErr net.Error
	var pg *pgconn.PgError
	switch {
	case errors.As(err, &connect), errors.As(err, &netErr), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, driver.ErrBadConn), errors.Is(err, pgconn.ErrConnClosed):
		return true
	case errors.As(err, &pg):
		// Class 08: connection exception; 57P01-57P03: the server is
		// shutting down or cannot accept connections yet.
		return strings.HasPrefix(pg.Code, "08") || pg.Code == "57P01" || pg.Code == "57P02" || pg.Code == "57P03"
	}
	// pgx reports a connection closed under a statement as a lock error
	// whose only mark is its text.
	return strings.Contains(err.Error(), "conn closed")
}
