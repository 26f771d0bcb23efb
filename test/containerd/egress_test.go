package containerd

import (
	"testing"

	"bulkhead.dev/bulkhead/test/ctrtest"
)

// TestRuncShimEgress: under containerd 1.6's runc shim, a profile with
// egress gives the job the broker and nothing else.
func TestRuncShimEgress(t *testing.T) {
	ctrtest.Egress(t, containerd16(t))
}
