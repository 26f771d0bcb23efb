// Package containerd runs bulkhead under a private containerd: through
// bulkhead's own shim (runtime io.containerd.bulkhead.v2, what a CRI
// runtime handler and a Kubernetes RuntimeClass use) and through
// containerd's runc shim with bulkhead as its binary (--runc-binary,
// options.BinaryName). The image is built here: busybox and bulkhead-probe
// packed as an OCI image-layout tar.
package containerd

import (
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
)

// shimRuntime is the runtime type containerd maps to
// containerd-shim-bulkhead-v2 on its PATH.
const shimRuntime = "io.containerd.bulkhead.v2"

// TestShimProbe: the probe passes every control in a container that
// containerd 1.6 started through containerd-shim-bulkhead-v2, with no
// runtime options at all: the shim found bulkhead by itself.
func TestShimProbe(t *testing.T) {
	d := containerd16(t)
	probeUnder(t, d, "--runtime", shimRuntime)
}

// TestRuncShimProbe: the plain path, containerd's own runc shim calling
// bulkhead as its runc binary.
func TestRuncShimProbe(t *testing.T) {
	d := containerd16(t)
	probeUnder(t, d, "--runtime", "io.containerd.runc.v2", "--runc-binary", binaries.Bulkhead(t))
}

func probeUnder(t *testing.T, d *daemon, runtimeArgs ...string) {
	t.Helper()
	id := newID("probe")
	args := append([]string{"run", "--rm"}, runtimeArgs...)
	r := d.run(2*time.Minute, append(args, image, id, "bulkhead-probe")...)
	if r.Code != 0 {
		t.Fatalf("%s\ncontainerd log:\n%s", r, d.logTail(20))
	}
	assertProbePasses(t, r.Stdout, 15)
	if !eventually(10*time.Second, func() bool { return len(leftovers(t, id)) == 0 }) {
		t.Errorf("after ctr run --rm: %s", strings.Join(leftovers(t, id), "\n"))
	}
}

// TestShimRefusalLeavesNothing: a container bulkhead refuses (a bind of
// /root, a home directory) does not run, ctr reports bulkhead's rule, and
// nothing of it is left: no shim process, task, cgroup, record or state.
func TestShimRefusalLeavesNothing(t *testing.T) {
	d := containerd16(t)
	for _, tc := range []struct {
		name    string
		runtime []string
	}{
		{"shim", []string{"--runtime", shimRuntime}},
		{"runc-binary", []string{"--runtime", "io.containerd.runc.v2", "--runc-binary", binaries.Bulkhead(t)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := newID("refused")
			args := append([]string{"run", "--rm"}, tc.runtime...)
			args = append(args, "--mount", "type=bind,src=/root,dst=/x,options=rbind:ro", image, id, "true")
			r := d.run(time.Minute, args...)
			t.Cleanup(func() { d.run(30*time.Second, "container", "rm", id) })
			if r.Code == 0 {
				t.Fatalf("a bind of /root ran:\n%s", r)
			}
			if !strings.Contains(r.Stderr, "bulkhead") || !strings.Contains(r.Stderr, "rule ") {
				t.Errorf("the error does not name bulkhead's rule:\n%s", r)
			}
			if tasks := d.must(t, "task", "ls", "--quiet"); strings.Contains(tasks, id) {
				t.Errorf("task %s still listed:\n%s", id, tasks)
			}
			if !eventually(10*time.Second, func() bool { return len(leftovers(t, id)) == 0 }) {
				t.Errorf("refused container left:\n%s", strings.Join(leftovers(t, id), "\n"))
			}
		})
	}
}
