package ctrtest

import (
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/egresshost"
	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/leftover"
)

// Egress runs a container through containerd's runc shim with bulkhead as
// its runc binary and a profile with egress, selected by the runtime
// binary's own arguments (what options.BinaryName names can carry no
// annotation). ctr gives the container a new network namespace; the broker
// listens there. The job reaches the allowed test host by name through
// the broker, also from an exec; another name gets 403 and the reason; a
// direct connect is unreachable; the broker is gone with the task.
func Egress(t *testing.T, d *Daemon) {
	t.Helper()
	h := egresshost.New(t)
	h.ServeHello(t)
	config, audit := h.InstallConfig(t, CgroupParents())
	wrapper := egresshost.Runtime(t, h.HostsFile(t, egresshost.Allowed, egresshost.Other), binaries.Bulkhead(t),
		"--config", config, "--profile", "install")

	id := NewID("egress")
	d.Must(t, "run", "-d", "--runtime", "io.containerd.runc.v2", "--runc-binary", wrapper, Image, id, "sleep", "600")
	stop := func() {
		d.Run(30*time.Second, "task", "kill", "--signal", "SIGKILL", id)
		engine.Eventually(10*time.Second, func() bool {
			return d.Run(10*time.Second, "task", "delete", id).Code == 0 || !strings.Contains(d.Run(10*time.Second, "task", "ls", "-q").Stdout, id)
		})
		d.Run(30*time.Second, "container", "rm", id)
	}
	t.Cleanup(stop)
	if pids := leftover.Brokers(id); len(pids) != 1 {
		t.Fatalf("brokers %v after ctr run, want one", pids)
	}
	out := d.Must(t, "task", "exec", "--exec-id", "egress", id, "sh", "-c", h.Script())
	h.Judge(t, out)
	stop()
	if pids := leftover.Brokers(id); len(pids) != 0 {
		t.Errorf("brokers %v still running after the task was deleted", pids)
	}
	// The watchdog ends once it sees the init gone, after the delete
	// returned; RunDetached's clean-up waits for it the same way.
	if !engine.Eventually(10*time.Second, func() bool { return len(Leftovers(t, id)) == 0 }) {
		t.Errorf("after task delete and container rm: %s", strings.Join(Leftovers(t, id), "\n"))
	}
	if n := egresshost.Verdicts(t, audit); n["allowed"] != 1 || n["denied"] != 2 {
		t.Errorf("audit log: %v, want 1 allowed and 2 denied", n)
	}
}
