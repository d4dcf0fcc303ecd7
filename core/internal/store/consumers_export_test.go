package store

import "time"

// SetClock replaces the store's clock, for tests of what it times (the
// throttle's bucket, rotations' overlaps).
func SetClock(s *Store, now func() time.Time) { s.now = now }

// SettingsInUse is the fan-out's question whether any active webhook has
// settings, for tests of its plan.
const SettingsInUse = settingsInUse

// TriesPlainFanOut reports whether the store's next fan-out tries the
// plain statements first.
func TriesPlainFanOut(s *Store) bool { return s.plainFanOut() }

// ForgetSettingsFound makes the store's next fan-out try the plain
// statements again, as it does once settingsRecheck has passed.
func ForgetSettingsFound(s *Store) { s.settingsUntil.Store(0) }
