// Package vforkpark builds a static program whose processes wait in vfork
// for ever, as a workload can keep them to stall what reads them.
package vforkpark

import (
	_ "embed"
	"testing"

	"bulkhead.dev/bulkhead/test/cprog"
)

//go:embed testdata/vforkpark.c
var source []byte

// Build compiles testdata/vforkpark.c and returns the program's path. Only
// C can do it: a vfork child must run nothing but pause(), which Go's
// runtime cannot promise, and Go may run main on a thread other than the
// one a reader stops.
func Build(t testing.TB) string {
	t.Helper()
	return cprog.Build(t, "vforkpark", source)
}
