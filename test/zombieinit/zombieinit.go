// Package zombieinit builds a static program whose leader thread exits
// while another thread of it runs on, as a job can end its main thread to
// look stopped.
package zombieinit

import (
	_ "embed"
	"testing"

	"bulkhead.dev/bulkhead/test/cprog"
)

//go:embed testdata/zombieinit.c
var source []byte

// Build compiles testdata/zombieinit.c and returns the program's path.
// Only C can do it: Go's runtime does not let main's thread exit alone.
func Build(t testing.TB) string {
	t.Helper()
	return cprog.Build(t, "zombieinit", source, "-pthread")
}
