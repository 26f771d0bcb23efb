package containerd2

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/ctrtest"
)

// TestShimGroupStaysWithItsRuntime: runc's shim manager, which bulkhead's
// shim runs, serves a container from an existing shim whose socket its
// group annotation names (io.containerd.runc.v2.group, CRI's sandbox id),
// before any rule sees the container. A client asking for bulkhead must
// never be served by a shim of another runtime: here plain runc's, which
// would have run the job as the image's root with runc's default
// capabilities.
func TestShimGroupStaysWithItsRuntime(t *testing.T) {
	d := containerd2(t)
	plain := ctrtest.RunDetached(t, d, "--runtime", "io.containerd.runc.v2")
	// runc's manager joins containerd's address, the namespace and the
	// group as a path before hashing them: a group climbing out of the
	// first two names any shim's key.
	climbing := "../../" + filepath.Base(d.Address) + "/" + ctrtest.Namespace + "/" + plain
	for name, annotation := range map[string]string{
		"group": "io.containerd.runc.v2.group=" + plain, "sandbox-id": "io.kubernetes.cri.sandbox-id=" + plain,
		"climbing-sandbox-id": "io.kubernetes.cri.sandbox-id=" + climbing,
	} {
		t.Run(name, func(t *testing.T) {
			id := ctrtest.NewID("grouped")
			r := d.Run(time.Minute, "run", "-d", "--runtime", ctrtest.ShimRuntime, "--annotation", annotation,
				ctrtest.Image, id, "sleep", "60")
			t.Cleanup(func() {
				d.Run(30*time.Second, "task", "kill", "--signal", "SIGKILL", id)
				time.Sleep(time.Second)
				d.Run(30*time.Second, "task", "delete", "--force", id)
				d.Run(30*time.Second, "container", "rm", id)
			})
			if r.Code != 0 {
				if key, _, _ := strings.Cut(annotation, "="); !strings.Contains(r.Stderr, "bulkhead: ") || !strings.Contains(r.Stderr, key) {
					t.Errorf("refused, but not by bulkhead naming the annotation: %s", r)
				}
				return // refused: nothing of it runs anywhere
			}
			var pid string
			for _, line := range strings.Split(d.Must(t, "task", "ls"), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
					pid = f[1]
				}
			}
			status, err := os.ReadFile("/proc/" + pid + "/status")
			if err != nil {
				t.Fatalf("task %s pid %q: %v", id, pid, err)
			}
			for _, want := range []string{"Uid:\t65534\t65534\t65534\t65534", "CapEff:\t0000000000000000"} {
				if !strings.Contains(string(status), want) {
					t.Errorf("a container asked for under %s, grouped by %s with a plain runc task, runs outside bulkhead's policy: /proc/%s/status lacks %q", ctrtest.ShimRuntime, annotation, pid, want)
				}
			}
		})
	}
}
