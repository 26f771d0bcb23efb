// Package cri runs pods under bulkhead through containerd 1.6's CRI plugin
// and crictl, the path a Kubernetes RuntimeClass takes: config.toml gets
// its runtime handler from `bulkhead install containerd`, the handler runs
// containerd-shim-bulkhead-v2 with no options, and the pod sandbox and its
// app container both get the policy. Images are built here (a static pause
// program, busybox + bulkhead-probe); crictl comes from
// hack/install-crictl.sh (cached in /var/tmp/bulkhead-crictl).
package cri

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"bulkhead.dev/bulkhead/test/ctrtest"
)

const (
	// handler is the runtime handler `bulkhead install containerd` adds.
	handler = "bulkhead"
	// pauseImage is the sandbox image the CRI config names.
	pauseImage = "bulkhead.dev/pause:test"
	bridge     = "bhcri16"
	subnet     = "10.250.98.0/24"
)

var shared struct {
	once sync.Once
	c    ctrtest.CRI
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c.D != nil {
		if err := shared.c.D.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
		ctrtest.DeleteBridge(bridge)
	}
	os.Exit(code)
}

// criConfig is containerd 1.6's config (version 2) with the CRI plugin on;
// the bulkhead handler is then added by `bulkhead install containerd`.
func criConfig(t testing.TB, dir, address string) (string, error) {
	cniConf, err := ctrtest.WriteCNIConfig(dir, bridge, subnet)
	if err != nil {
		return "", err
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # the pause container asks for oom_score_adj -998; root here lacks
  # CAP_SYS_RESOURCE, so containerd must not lower it below its own
  restrict_oom_score_adj = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
%s
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), address, address+".ttrpc",
		filepath.Join(dir, "opt"), pauseImage, ctrtest.EgressHandlerConfig(dir), cniConf)
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return "", err
	}
	if err := ctrtest.InstallHandler(t, path, 2); err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	return string(data), err
}

// cri starts the shared CRI containerd and imports the two images.
func cri(t *testing.T) ctrtest.CRI {
	t.Helper()
	ctrtest.NeedRoot(t)
	ctrtest.WithShimOnPath(t)
	shared.once.Do(func() {
		shared.err = fmt.Errorf("containerd with CRI did not start")
		c, err := ctrtest.StartCRI(t, "/usr/bin/containerd", "ctr", func(dir, address string) (string, error) {
			return criConfig(t, dir, address)
		})
		if c.D != nil {
			shared.c = c
		}
		if err != nil {
			shared.err = err
			return
		}
		shared.c.Handler = handler
		shared.err = c.D.ImportPause(pauseImage)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.c
}

func TestPodLifecycle(t *testing.T) { ctrtest.PodLifecycle(t, cri(t)) }

// TestPodEgress: a pod's containers share its sandbox's broker.
func TestPodEgress(t *testing.T) { ctrtest.PodEgress(t, cri(t)) }

func TestPodProbe(t *testing.T) { ctrtest.PodProbe(t, cri(t)) }

func TestHostNetworkPod(t *testing.T) { ctrtest.HostNetworkPod(t, cri(t)) }

func TestPodRefusal(t *testing.T) { ctrtest.PodRefusal(t, cri(t)) }

func TestPodWorkspace(t *testing.T) { ctrtest.PodWorkspace(t, cri(t)) }

// TestPodCheckout: real checkouts as hostPath mounts at /workspace.
func TestPodCheckout(t *testing.T) { ctrtest.PodCheckout(t, cri(t)) }

// TestPodMountPropagation: a volume below /tmp, and HostToContainer,
// Private and Bidirectional propagation, the mount handling critest's
// volume and propagation tests look at.
func TestPodMountPropagation(t *testing.T) { ctrtest.PodMountPropagation(t, cri(t)) }
