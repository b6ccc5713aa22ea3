package engine

import (
	"context"
	"time"
)

// RetryLater asks the effect step to be tried again after Delay (the
// activity turns it into a retryable failure with that next-retry delay).
type RetryLater struct {
	Err   error
	Delay time.Duration
}

func (r *RetryLater) Error() string { return r.Err.Error() }
func (r *RetryLater) Unwrap() error { return r.Err }

type attemptKey struct{}

// WithAttempt tells an effect which attempt (from 1) this is.
func WithAttempt(ctx context.Context, n int32) context.Context {
	return context.WithValue(ctx, attemptKey{}, n)
}

// Attempt is the attempt WithAttempt set (1 when none was).
func Attempt(ctx context.Context) int32 {
	if n, ok := ctx.Value(attemptKey{}).(int32); ok && n > 0 {
		return n
	}
	return 1
}
