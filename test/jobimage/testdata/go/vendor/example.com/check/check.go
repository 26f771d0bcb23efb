// Package check is a tiny test assertion library.
package check

import "testing"

// Equal fails t when got != want.
func Equal[T comparable](t testing.TB, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}
