// Package containerd2 runs bulkhead under a private containerd 2.x (v2.4.2,
// built from the module proxy by hack/install-containerd2.sh and cached)
// with a version 3 config: the same ctr paths as test/containerd runs on
// containerd 1.6. containerd-shim-bulkhead-v2 answers this daemon with the
// JSON bootstrap (version 3) and the containerd.task.v3 API.
package containerd2

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/ctrtest"
	"bulkhead.dev/bulkhead/test/engine"
)

var shared struct {
	once sync.Once
	d    *ctrtest.Daemon
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := closeCRI(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	if shared.d != nil {
		if err := shared.d.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// config3 is a version 3 config for a private containerd 2.x without CRI.
func config3(dir, address string) string {
	return fmt.Sprintf(`version = 3
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images", "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.sandbox.controller.v1.shim"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  level = "info"
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), address, address+".ttrpc")
}

func containerd2(t *testing.T) *ctrtest.Daemon {
	t.Helper()
	ctrtest.NeedRoot(t)
	shared.once.Do(func() {
		shared.err = fmt.Errorf("containerd 2 did not start")
		dir := ctrtest.Containerd2(t)
		// containerd 2's own runc shim must come before Debian's 1.6 one.
		ctrtest.WithShimOnPath(t, dir)
		c, err := engine.StartContainerdConfig(engine.ContainerdConfigOptions{
			Binary:         filepath.Join(dir, "containerd"),
			Config:         config3,
			BulkheadConfig: ctrtest.BulkheadConfig(),
		})
		if err != nil {
			shared.err = err
			return
		}
		shared.d = &ctrtest.Daemon{Containerd: c, Ctr: filepath.Join(dir, "ctr")}
		ctrtest.Serves(ctrtest.Namespace, shared.d)
		shared.err = shared.d.ImportProbeImage(t)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.d
}

func TestShimProbe(t *testing.T) {
	ctrtest.ProbeUnder(t, containerd2(t), "--runtime", ctrtest.ShimRuntime)
}

func TestRuncShimProbe(t *testing.T) {
	ctrtest.ProbeUnder(t, containerd2(t), "--runtime", "io.containerd.runc.v2", "--runc-binary", binaries.Bulkhead(t))
}

func TestShimRefusalLeavesNothing(t *testing.T) {
	ctrtest.RefusalLeavesNothing(t, containerd2(t))
}

func TestShimServesContainer(t *testing.T) {
	ctrtest.ShimRunsBulkhead(t, containerd2(t), "containerd-shim-bulkhead-v2", "--runtime", ctrtest.ShimRuntime)
}

// TestShimBootstrapJSON: containerd 2.x gets the JSON bootstrap object of
// shim protocol version 3 over ttrpc (containerd stores it in the bundle's
// bootstrap.json), not the plain address the shim gives containerd 1.6.
func TestShimBootstrapJSON(t *testing.T) {
	d := containerd2(t)
	id := ctrtest.RunDetached(t, d, "--runtime", ctrtest.ShimRuntime)
	data, err := os.ReadFile(filepath.Join(d.TaskBundle(id), "bootstrap.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Version  int    `json:"version"`
		Address  string `json:"address"`
		Protocol string `json:"protocol"`
	}
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatalf("bootstrap.json: %v\n%s", err, data)
	}
	if b.Version != 3 || b.Protocol != "ttrpc" || !strings.HasPrefix(b.Address, "unix:///") {
		t.Errorf("bootstrap.json = %s, want version 3, ttrpc, a unix:// address", data)
	}
}

// TestShimSurvivesRestart: containerd 2.x reconnects through bootstrap.json.
func TestShimSurvivesRestart(t *testing.T) {
	ctrtest.SurvivesRestart(t, containerd2(t), "--runtime", ctrtest.ShimRuntime)
}

func TestShimWorkspaceLoop(t *testing.T) {
	ctrtest.WorkspaceLoop(t, containerd2(t), "--runtime", ctrtest.ShimRuntime)
}

func TestRuncShimWorkspaceLoop(t *testing.T) {
	ctrtest.WorkspaceLoop(t, containerd2(t), "--runtime", "io.containerd.runc.v2", "--runc-binary", binaries.Bulkhead(t))
}

// TestShimWorkspaceCheckout: real checkouts through bulkhead's shim.
func TestShimWorkspaceCheckout(t *testing.T) {
	ctrtest.CheckoutRun(t, containerd2(t), "--runtime", ctrtest.ShimRuntime)
}
