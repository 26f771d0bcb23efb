package cgroups

import (
	"os"
	"testing"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
)

// pidPathV1 reads the mount table once where the library reads it per
// controller: the answers must be the library's, controller by controller.
func TestPidPathV1IsTheLibrarys(t *testing.T) {
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		t.Skip("cgroup v2 only: no v1 hierarchies on this host")
	}
	ours, theirs := pidPathV1(os.Getpid()), cgroup1.PidPath(os.Getpid())
	compared := 0
	for _, n := range []cgroup1.Name{cgroup1.Pids, cgroup1.Memory, cgroup1.Cpu, cgroup1.Cpuacct, cgroup1.Devices, cgroup1.Freezer, cgroup1.SystemdDbus, "systemd"} {
		o, oerr := ours(n)
		w, werr := theirs(n)
		if o != w || (oerr == nil) != (werr == nil) {
			t.Errorf("%s: ours %q, %v; library %q, %v", n, o, oerr, w, werr)
		}
		if oerr == nil {
			compared++
		}
	}
	if compared == 0 {
		t.Fatal("no controller compared: this process is in no v1 hierarchy")
	}
	h, err := v1Hierarchy()
	if err != nil {
		t.Fatal(err)
	}
	want, err := cgroup1.Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != len(want) {
		t.Fatalf("hierarchy of %d subsystems, library's %d", len(h), len(want))
	}
}
