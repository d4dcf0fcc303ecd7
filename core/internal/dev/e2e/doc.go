// Package e2e runs govgate as a real process against real HTTPS receivers,
// SQLite files and a real PostgreSQL server; its tests are in the _test files.
package e2e
