// Package container checks govgate's deployment files: the container image
// built from configs/Containerfile, run with podman or docker against SQLite
// and PostgreSQL, and configs/compose/compose.yaml against what govgate's
// command line and configuration accept. Its tests are in the _test files.
package container
