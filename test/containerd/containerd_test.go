// Package containerd runs bulkhead under a private containerd 1.6: through
// bulkhead's own shim (runtime io.containerd.bulkhead.v2, what a CRI
// runtime handler and a Kubernetes RuntimeClass use) and through
// containerd's runc shim with bulkhead as its binary (--runc-binary,
// options.BinaryName). The image is built here: busybox and bulkhead-probe
// packed as an OCI image-layout tar.
package containerd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/ctrtest"
	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/probeout"
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

// TestRunscShimProbe: containerd-shim-bulkhead-runsc-v2 (runtime
// io.containerd.bulkhead-runsc.v2) runs the probe in gVisor through
// bulkhead-runsc: the shim's name picks the runtime binary. gVisor answers
// some controls its own way (-gvisor; its cpu line is not judged inside,
// test/docker checks the host's throttling), and past the memory limit the
// host OOM killer ends the whole sandbox, so the probe tries that after its
// done line (-memory-after-done) and the task's SIGKILL exit is the
// verdict.
func TestRunscShimProbe(t *testing.T) {
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skip("runsc is not installed")
	}
	d := containerd16(t)
	binaries.RunscShim(t)
	id := ctrtest.NewID("runsc")
	ws := probeout.NewWorkspace(t)
	args := append([]string{"run", "--rm", "--runtime", "io.containerd.bulkhead-runsc.v2"}, ctrtest.WorkspaceMount(ws)...)
	r := d.Run(3*time.Minute, append(args, ctrtest.Image, id, "bulkhead-probe", "-gvisor", "-memory-after-done")...)
	// Every control but memory (after done) must report; cpu only the
	// host can judge under gVisor (TestGVisor in test/docker does, from
	// the sandbox's cpu.stat).
	var beforeDone []string
	for _, c := range runtime.ProbeControls {
		if c != "memory" {
			beforeDone = append(beforeDone, c)
		}
	}
	probeout.AssertControls(t, r.Stdout, ws, beforeDone, func(l probeout.Line) bool {
		return l.Control == "cpu" && strings.Contains(l.Observed, "not judged: gVisor")
	})
	if t.Failed() {
		t.Logf("%s\ncontainerd log:\n%s", r, d.LogTail(20))
	}
	if r.Code != 137 {
		t.Errorf("memory: the sandbox was not killed after done (exit %d, want 137 = SIGKILL by the OOM killer)", r.Code)
	}
	if !engine.Eventually(10*time.Second, func() bool { return len(ctrtest.Leftovers(t, id)) == 0 }) {
		t.Errorf("after ctr run --rm: %s", strings.Join(ctrtest.Leftovers(t, id), "\n"))
	}
}

// TestShimBootstrapPlain: containerd 1.6 reads the shim's answer to start
// as the plain socket address (it stores it in the bundle's address file);
// the shim must not give it the JSON object of newer containerds.
func TestShimBootstrapPlain(t *testing.T) {
	d := containerd16(t)
	id := ctrtest.RunDetached(t, d, "--runtime", ctrtest.ShimRuntime)
	data, err := os.ReadFile(filepath.Join(d.TaskBundle(id), "address"))
	if err != nil {
		t.Fatal(err)
	}
	if addr := string(data); !strings.HasPrefix(addr, "unix:///") || strings.ContainsAny(addr, "{\"") {
		t.Errorf("bundle address = %q, want a plain unix:// address", addr)
	}
}

// TestShimSurvivesRestart: after containerd 1.6 restarts it reconnects to
// the shim through the bundle's address file, which the shim writes for it.
func TestShimSurvivesRestart(t *testing.T) {
	ctrtest.SurvivesRestart(t, containerd16(t), "--runtime", ctrtest.ShimRuntime)
}

// TestShimWorkspaceLoop: twenty `ctr run --rm` with a workspace bind
// through containerd-shim-bulkhead-v2 leave no shim, task, mount or state.
func TestShimWorkspaceLoop(t *testing.T) {
	ctrtest.WorkspaceLoop(t, containerd16(t), "--runtime", ctrtest.ShimRuntime)
}

// TestRuncShimWorkspaceLoop: the same through containerd's runc shim with
// bulkhead as its binary.
func TestRuncShimWorkspaceLoop(t *testing.T) {
	ctrtest.WorkspaceLoop(t, containerd16(t), "--runtime", "io.containerd.runc.v2", "--runc-binary", binaries.Bulkhead(t))
}

// TestShimWorkspaceCheckout: real checkouts through bulkhead's shim.
func TestShimWorkspaceCheckout(t *testing.T) {
	ctrtest.CheckoutRun(t, containerd16(t), "--runtime", ctrtest.ShimRuntime)
}
