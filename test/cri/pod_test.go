package cri

import (
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/ctrtest"
)

// TestPodLifecycle: runp, create, start, exec, logs, stop, rm, stopp, rmp
// with handler bulkhead. The sandbox and the app both run under the
// policy, the app shares the sandbox's network namespace, and that
// namespace has loopback only (bulkhead replaced the one CNI set up with
// a new one); nothing is left after rmp.
func TestPodLifecycle(t *testing.T) {
	d, bin := daemon(t)
	c := crictl{bin: bin, address: d.Address}
	pod := podConfig(t, "bh-pod", false)
	podID := c.must(t, d, "runp", "--runtime", handler, pod)
	t.Cleanup(func() {
		c.run("stopp", podID)
		c.run("rmp", "--force", podID)
	})
	pausePid := c.infoPid(t, d, "inspectp", podID)
	assertConfined(t, "pod sandbox", pausePid)

	ctr := writeJSON(t, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "app"},
		"image":    map[string]any{"image": "docker.io/library/bulkhead-test:latest"},
		"command":  []string{"sh", "-c", "echo hello-from-app; exec sleep 3600"},
		"log_path": "app.log",
		"linux":    map[string]any{},
	})
	cid := c.must(t, d, "create", podID, ctr, pod)
	c.must(t, d, "start", cid)
	appPid := c.infoPid(t, d, "inspect", cid)
	assertConfined(t, "app container", appPid)

	if got, want := netns(t, appPid), netns(t, pausePid); got != want {
		t.Errorf("app netns %s, pod sandbox netns %s: the app does not share the pod's network", got, want)
	}
	if netns(t, pausePid) == hostNetns(t) {
		t.Errorf("the pod runs in the host's network namespace")
	}
	if ifs := interfaces(t, pausePid); len(ifs) != 1 || ifs[0] != "lo" {
		t.Errorf("pod network namespace has %v, want loopback only", ifs)
	}

	if out := c.must(t, d, "exec", cid, "id", "-u"); out != "65534" {
		t.Errorf("crictl exec id -u = %q, want 65534", out)
	}
	r := c.run("exec", cid, "sh", "-c", "cat /proc/self/status | grep CapEff")
	if !strings.Contains(r.stdout, "0000000000000000") {
		t.Errorf("exec'd process has capabilities:\n%s", r)
	}
	if out := c.must(t, d, "logs", cid); !strings.Contains(out, "hello-from-app") {
		t.Errorf("crictl logs: %q", out)
	}

	c.must(t, d, "stop", "--timeout", "2", cid)
	c.must(t, d, "rm", cid)
	c.must(t, d, "stopp", podID)
	c.must(t, d, "rmp", podID)
	leftoversGone(t, cid, podID)
}

// TestPodProbe: bulkhead-probe passes every control as the app container
// of a pod.
func TestPodProbe(t *testing.T) {
	d, bin := daemon(t)
	c := crictl{bin: bin, address: d.Address}
	pod := podConfig(t, "bh-probe", false)
	podID := c.must(t, d, "runp", "--runtime", handler, pod)
	t.Cleanup(func() {
		c.run("stopp", podID)
		c.run("rmp", "--force", podID)
	})
	ctr := writeJSON(t, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "probe"},
		"image":    map[string]any{"image": "docker.io/library/bulkhead-test:latest"},
		"command":  []string{"bulkhead-probe"},
		"log_path": "probe.log",
		"linux":    map[string]any{},
	})
	cid := c.must(t, d, "create", podID, ctr, pod)
	c.must(t, d, "start", cid)
	var out string
	for i := 0; i < 600; i++ {
		out = c.run("logs", cid).stdout
		if strings.Contains(out, `"control":"done"`) {
			break
		}
		sleep()
	}
	assertProbeLog(t, out)
	c.must(t, d, "stop", "--timeout", "2", cid)
	// The CRI plugin records the exit asynchronously: rm can race it.
	if !ctrtest.Eventually(10*time.Second, func() bool { return c.run("rm", cid).err == nil }) {
		t.Errorf("%s", c.run("rm", cid))
	}
	c.must(t, d, "stopp", podID)
	c.must(t, d, "rmp", podID)
	leftoversGone(t, cid, podID)
}

// TestHostNetworkPod: a pod that asks for the host's network gets a new
// namespace with loopback only, or is refused with the rule named.
func TestHostNetworkPod(t *testing.T) {
	d, bin := daemon(t)
	c := crictl{bin: bin, address: d.Address}
	pod := podConfig(t, "bh-hostnet", true)
	r := c.run("runp", "--runtime", handler, pod)
	if r.err != nil {
		if !strings.Contains(r.stderr, "bulkhead") || !strings.Contains(r.stderr, "rule network") {
			t.Fatalf("host-network pod refused without naming the rule:\n%s", r)
		}
		t.Logf("refused: %s", strings.TrimSpace(r.stderr))
		return
	}
	podID := strings.TrimSpace(r.stdout)
	t.Cleanup(func() {
		c.run("stopp", podID)
		c.run("rmp", "--force", podID)
	})
	pid := c.infoPid(t, d, "inspectp", podID)
	if netns(t, pid) == hostNetns(t) {
		t.Fatalf("host-network pod runs in the host's network namespace")
	}
	if ifs := interfaces(t, pid); len(ifs) != 1 || ifs[0] != "lo" {
		t.Errorf("host-network pod sees %v, want loopback only", ifs)
	}
	t.Logf("host-network pod got its own namespace with %v", interfaces(t, pid))
	c.must(t, d, "stopp", podID)
	c.must(t, d, "rmp", podID)
	leftoversGone(t, podID)
}
