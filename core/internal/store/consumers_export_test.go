package store

import "time"

// SetClock replaces the store's clock, for tests of what it times (the
// throttle's bucket, rotations' overlaps).
func SetClock(s *Store, now func() time.Time) { s.now = now }
