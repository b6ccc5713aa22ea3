package auth

import "time"

// SetClock sets the clock of s and of its throttle (tests).
func SetClock(s *Service, now func() time.Time) {
	s.now = now
	s.throttle.mu.Lock()
	s.throttle.now = now
	s.throttle.mu.Unlock()
}
