package docker

import (
	"path/filepath"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/egresshost"
	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/leftover"
)

// TestEgressProfile: docker 20.10's CLI passes no annotations, so the
// runtime entry selects the profile with egress (runtimeArgs --config and
// --profile). Whatever network docker asks for (its bridge, whose hook
// would give the container eth0, or the host's), the job gets a namespace
// with loopback only, where the broker is its one way out: the allowed
// name answers by name, another gets 403 and the reason, a direct connect
// is unreachable, also for docker exec. There is one broker while the
// container runs and none once docker removed it.
func TestEgressProfile(t *testing.T) {
	d := daemon(t)
	h := egresshost.New(t)
	h.ServeHello(t)
	config, audit := h.InstallConfig(t)
	wrapper := egresshost.Runtime(t, h.HostsFile(t, egresshost.Allowed, egresshost.Other), binaries.Bulkhead(t))
	registerRuntimePath(t, d, "bulkhead-egress", engine.Runtime{Path: wrapper, Args: []string{"--config", config, "--profile", "install"}})

	for _, network := range []string{"bridge", "host"} {
		t.Run(network, func(t *testing.T) {
			cid := d.Must(t, "run", "-d", "--runtime=bulkhead-egress", "--network="+network, image, "sleep", "3600")
			if pids := leftover.Brokers(cid); len(pids) != 1 {
				d.Run(t, "rm", "-f", cid)
				t.Fatalf("brokers %v after docker run, want one", pids)
			}
			// docker exec: the proxy variables reach an exec'd process too.
			out := d.Must(t, "exec", cid, "sh", "-c", h.Script())
			h.Judge(t, out+"\n")
			d.Must(t, "rm", "-f", cid)
			if pids := leftover.Brokers(cid); len(pids) != 0 {
				t.Errorf("brokers %v still running after docker rm -f", pids)
			}
		})
	}
	if n := egresshost.Verdicts(t, audit); n["allowed"] != 2 || n["denied"] != 4 {
		t.Errorf("audit log: %v, want 2 allowed and 4 denied (wget and a raw request per run)", n)
	}
}

// registerRuntimePath adds the runtime entry name to the shared dockerd
// beside bulkhead and bulkhead-runsc, until the test ends.
func registerRuntimePath(t *testing.T, d *engine.Docker, name string, rt engine.Runtime) {
	t.Helper()
	bin := binaries.Dir(t)
	runtimes := map[string]engine.Runtime{
		"bulkhead":       {Path: filepath.Join(bin, "bulkhead")},
		"bulkhead-runsc": {Path: filepath.Join(bin, "bulkhead-runsc")},
	}
	with := map[string]engine.Runtime{name: rt}
	for k, v := range runtimes {
		with[k] = v
	}
	if err := d.WriteConfig(with); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.WriteConfig(runtimes); err == nil {
			_ = d.Reload()
		}
	})
}
