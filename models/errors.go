package models

import (
	"errors"

	"gorm.io/gorm"
)

// IsNotFound reports whether err says a looked-up record does not exist,
// so that callers above the stores (the API's error rendering) need not
// know the errors of the database library.
func IsNotFound(err error) bool { return errors.Is(err, gorm.ErrRecordNotFound) }

// IsDuplicate reports whether err is a unique constraint refusing a row.
func IsDuplicate(err error) bool { return errors.Is(err, gorm.ErrDuplicatedKey) }
