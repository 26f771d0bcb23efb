package containerd2

import (
	"testing"

	"bulkhead.dev/bulkhead/test/ctrtest"
)

// TestRuncShimEgress: under containerd 2.x's runc shim, a profile with
// egress gives the job the broker and nothing else.
func TestRuncShimEgress(t *testing.T) {
	ctrtest.Egress(t, containerd2(t))
}
