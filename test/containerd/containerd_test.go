// Package containerd runs bulkhead under a private containerd 1.6: through
// bulkhead's own shim (runtime io.containerd.bulkhead.v2, what a CRI
// runtime handler and a Kubernetes RuntimeClass use) and through
// containerd's runc shim with bulkhead as its binary (--runc-binary,
// options.BinaryName). The image is built here: busybox and bulkhead-probe
// packed as an OCI image-layout tar.
package containerd

import (
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/ctrtest"
)

// TestShimProbe: the probe passes every control in a container that
// containerd 1.6 started through containerd-shim-bulkhead-v2, with no
// runtime options at all: the shim found bulkhead by itself.
func TestShimProbe(t *testing.T) {
	ctrtest.ProbeUnder(t, containerd16(t), "--runtime", ctrtest.ShimRuntime)
}

// TestRuncShimProbe: the plain path, containerd's own runc shim calling
// bulkhead as its runc binary.
func TestRuncShimProbe(t *testing.T) {
	ctrtest.ProbeUnder(t, containerd16(t), "--runtime", "io.containerd.runc.v2", "--runc-binary", binaries.Bulkhead(t))
}

// TestShimRefusalLeavesNothing: a container bulkhead refuses (a bind of
// /root, a home directory) does not run, ctr shows bulkhead's rule, and
// nothing of it is left: no shim process, task, cgroup, record or state.
func TestShimRefusalLeavesNothing(t *testing.T) {
	ctrtest.RefusalLeavesNothing(t, containerd16(t))
}

// TestShimServesContainer: the container runs under
// containerd-shim-bulkhead-v2, bulkhead recorded it, and its process has
// the policy's identity, capabilities and no_new_privs.
func TestShimServesContainer(t *testing.T) {
	ctrtest.ShimRunsBulkhead(t, containerd16(t), "containerd-shim-bulkhead-v2", "--runtime", ctrtest.ShimRuntime)
}
