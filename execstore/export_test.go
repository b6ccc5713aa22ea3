package execstore

import "time"

// SetAfterDay sets the backfill's hook run at the end of each day's
// transaction (nil: none).
func SetAfterDay(f func(day time.Time) error) { afterDay = f }
