// Package policy holds the integration tests of bulkhead's policy on a
// real backend: hostile bundles through create/run, exec and update
// through the CLI, audit mode. The tests need root and runc.
package policy
