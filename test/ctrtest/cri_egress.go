package ctrtest

import (
	"fmt"
	"path/filepath"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/egresshost"
	"bulkhead.dev/bulkhead/test/leftover"
)

// EgressHandler is the CRI runtime handler of the egress tests: the runc
// shim with options.BinaryName at EgressRuntime(dir), an executable the
// test writes when it runs (egresshost.WriteRuntime), since the test
// host's address is not known when the configuration is.
const EgressHandler = "bulkhead-egress"

// EgressRuntime is the BinaryName of EgressHandler below containerd's
// directory dir.
func EgressRuntime(dir string) string { return filepath.Join(dir, "egress-runtime") }

// EgressHandlerConfig is the handler's table for a version 2 config
// (containerd 1.6).
func EgressHandlerConfig(dir string) string {
	return egressHandlerTable(`"io.containerd.grpc.v1.cri".containerd`, dir)
}

// EgressHandlerConfig3 is the handler's table for a version 3 config
// (containerd 2.x).
func EgressHandlerConfig3(dir string) string {
	return egressHandlerTable(`'io.containerd.cri.v1.runtime'.containerd`, dir)
}

func egressHandlerTable(plugin, dir string) string {
	return runcShimHandlerTable(plugin, EgressHandler, EgressRuntime(dir))
}

// runcShimHandlerTable is a CRI handler NAME on containerd's runc shim
// with options.BinaryName BINARY.
func runcShimHandlerTable(plugin, name, binary string) string {
	return fmt.Sprintf(`
    [plugins.%[1]s.runtimes.%[2]s]
      runtime_type = "io.containerd.runc.v2"
      [plugins.%[1]s.runtimes.%[2]s.options]
        BinaryName = %[3]q
`, plugin, name, binary)
}

// PodEgress: a pod under a profile with egress. CRI made a network
// namespace for the pod (CNI's veth in it); bulkhead gives the pod
// sandbox a loopback-only one instead, and the sandbox's broker listens
// there. The app container joins the sandbox's namespace, which it may
// only under the sandbox's own profile, so the one broker serves it with
// that profile's list: the pod has one broker, not one per container.
// From the app, the allowed name answers through it, another gets 403 and
// the reason, a direct connect is unreachable; the broker leaves with the
// pod.
func PodEgress(t *testing.T, c CRI) {
	h := egresshost.New(t)
	h.ServeHello(t)
	config, audit := h.InstallConfig(t)
	egresshost.WriteRuntime(t, EgressRuntime(c.D.Dir), h.HostsFile(t, egresshost.Allowed, egresshost.Other), binaries.Bulkhead(t),
		"--config", config, "--profile", "install")

	pod := PodConfig(t, "bh-egress", false)
	podID := c.Must(t, "runp", "--runtime", EgressHandler, pod)
	t.Cleanup(func() {
		c.Run("stopp", podID)
		c.Run("rmp", "--force", podID)
	})
	pausePid := c.InfoPid(t, "inspectp", podID)
	if ifs := interfaces(t, pausePid); len(ifs) != 1 || ifs[0] != "lo" {
		t.Errorf("pod network namespace has %v, want loopback only", ifs)
	}
	if pids := leftover.Brokers(podID); len(pids) != 1 {
		t.Fatalf("brokers %v after runp, want the pod sandbox's", pids)
	}
	ctr := WriteJSON(t, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "app"},
		"image":    map[string]any{"image": Image},
		"command":  []string{"sleep", "3600"},
		"log_path": "app.log",
		"linux":    map[string]any{},
	})
	cid := c.Must(t, "create", podID, ctr, pod)
	c.Must(t, "start", cid)
	if got, want := netns(t, c.InfoPid(t, "inspect", cid)), netns(t, pausePid); got != want {
		t.Fatalf("app netns %s, pod sandbox netns %s: the app does not share the pod's network", got, want)
	}
	if pids := leftover.Brokers(podID); len(pids) != 1 {
		t.Errorf("brokers %v with the app running, want the pod sandbox's alone", pids)
	}
	h.Judge(t, c.Must(t, "exec", cid, "sh", "-c", h.Script())+"\n")

	c.Must(t, "stop", "--timeout", "2", cid)
	c.Must(t, "rm", cid)
	c.Must(t, "stopp", podID)
	c.Must(t, "rmp", podID)
	c.LeftoversGone(t, cid, podID)
	if pids := leftover.Brokers(podID); len(pids) != 0 {
		t.Errorf("brokers %v still running after rmp", pids)
	}
	if n := egresshost.Verdicts(t, audit); n["allowed"] != 1 || n["denied"] != 2 {
		t.Errorf("audit log: %v, want 1 allowed and 2 denied", n)
	}
}
