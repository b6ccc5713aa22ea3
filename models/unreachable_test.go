package models_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// TestIsUnreachable: the errors of a database that cannot be reached or a
// connection lost mid-statement are told apart from every other failure
// (which stays an internal error).
func TestIsUnreachable(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("record execution: %w", reset), true},
		{fmt.Errorf("read execution: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("record execution: %w", errors.New("conn closed")), true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{gorm.ErrRecordNotFound, false},
		{errors.New("object type has no primary key"), false},
		{nil, false},
	} {
		if got := models.IsUnreachable(c.err); got != c.want {
			t.Errorf("IsUnreachable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
