package auth

import "time"

// SetClock sets the clock of s and of its throttle (tests).
func SetClock(s *Service, now func() time.Time) {
	s.now = now
	s.throttle.mu.Lock()
	s.throttle.now = now
	s.throttle.mu.Unlock()
}

// UserCacheLen is the number of user rows s holds (tests).
func UserCacheLen(s *Service) int {
	s.umu.Lock()
	defer s.umu.Unlock()
	return s.users.Len()
}
