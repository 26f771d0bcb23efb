package containerd2

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"bulkhead.dev/bulkhead/test/ctrtest"
)

const (
	pauseImage = "bulkhead.dev/pause:test"
	bridge     = "bhcri2"
	subnet     = "10.250.97.0/24"
)

// sharedCRI is a second private containerd 2.x, with the CRI plugin on.
var sharedCRI struct {
	once sync.Once
	c    ctrtest.CRI
	err  error
}

func closeCRI() error {
	if sharedCRI.c.D == nil {
		return nil
	}
	defer ctrtest.DeleteBridge(bridge)
	return sharedCRI.c.D.Close()
}

// criConfig3 is containerd 2.x's version 3 config with CRI on, the egress
// tests' handler and a gVisor handler set up by hand; the bulkhead handler
// (plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.bulkhead) is
// then added by `bulkhead install containerd`.
func criConfig3(t testing.TB, dir, address string) (string, error) {
	cniConf, err := ctrtest.WriteCNIConfig(dir, bridge, subnet)
	if err != nil {
		return "", err
	}
	config := fmt.Sprintf(`version = 3
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  level = "info"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'

  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q

[plugins.'io.containerd.cri.v1.runtime']
  # the pause container asks for oom_score_adj -998; root here lacks
  # CAP_SYS_RESOURCE, so containerd must not lower it below its own
  restrict_oom_score_adj = true

  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = %q
%s%s`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), address, address+".ttrpc", pauseImage, cniConf,
		ctrtest.EgressHandlerConfig3(dir), ctrtest.GVisorRuncShimHandlerConfig3(t))
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return "", err
	}
	if err := ctrtest.InstallHandler(t, path, 3); err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	return string(data), err
}

func cri(t *testing.T) ctrtest.CRI {
	t.Helper()
	ctrtest.NeedRoot(t)
	sharedCRI.once.Do(func() {
		sharedCRI.err = fmt.Errorf("containerd 2 with CRI did not start")
		dir := ctrtest.Containerd2(t)
		ctrtest.WithShimOnPath(t, dir)
		c, err := ctrtest.StartCRI(t, filepath.Join(dir, "containerd"), filepath.Join(dir, "ctr"), func(d, address string) (string, error) {
			return criConfig3(t, d, address)
		})
		if c.D != nil {
			sharedCRI.c = c
		}
		if err != nil {
			sharedCRI.err = err
			return
		}
		sharedCRI.c.Handler = "bulkhead"
		sharedCRI.err = c.D.ImportPause(pauseImage)
	})
	if sharedCRI.err != nil {
		t.Fatal(sharedCRI.err)
	}
	return sharedCRI.c
}

func TestCRIPodLifecycle(t *testing.T) { ctrtest.PodLifecycle(t, cri(t)) }

// TestCRIPodEgress: a pod's containers share its sandbox's broker.
func TestCRIPodEgress(t *testing.T) { ctrtest.PodEgress(t, cri(t)) }

func TestCRIPodProbe(t *testing.T) { ctrtest.PodProbe(t, cri(t)) }

func TestCRIHostNetworkPod(t *testing.T) { ctrtest.HostNetworkPod(t, cri(t)) }

func TestCRIPodRefusal(t *testing.T) { ctrtest.PodRefusal(t, cri(t)) }

func TestCRIPodWorkspace(t *testing.T) { ctrtest.PodWorkspace(t, cri(t)) }

// TestCRIPodCheckout: real checkouts as hostPath mounts at /workspace.
func TestCRIPodCheckout(t *testing.T) { ctrtest.PodCheckout(t, cri(t)) }

// TestCRIPodMountPropagation: a volume below /tmp, and HostToContainer,
// Private and Bidirectional propagation, the mount handling critest's
// volume and propagation tests look at.
func TestCRIPodMountPropagation(t *testing.T) { ctrtest.PodMountPropagation(t, cri(t)) }

// TestCRIGVisorPodMemberRefused: containerd's runc shim, as a gVisor
// handler set up by hand, serves no container of a gVisor pod, and
// bulkhead says so at create, so the pod can be removed.
func TestCRIGVisorPodMemberRefused(t *testing.T) {
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skip("runsc is not installed")
	}
	ctrtest.GVisorPodMemberRefused(t, cri(t))
}
