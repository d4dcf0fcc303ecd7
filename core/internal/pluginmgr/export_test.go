package pluginmgr

// OnPrepared makes m call f after each notification its preparers have
// prepared, so that a test waits for the preparation instead of polling the
// host's counters. Call it before Run.
func OnPrepared(m *Manager, f func()) { m.onPrepared = f }
