package test

import (
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// `run` of a pod's container returns the container's own status and
// output on both backends. On runsc the container runs in the pod's
// sandbox process, which is no child of the run: its status is runsc's
// to report.
func TestPodMemberRunReturnsItsStatus(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			g := []string{"--root", stateRoot(t), "--backend", backend}
			p := startPodSandbox(t, g, "member-run-"+backend)
			for _, c := range []struct {
				script string
				status int
			}{
				{"echo member-out; exit 3", 3},
				{"echo member-out", 0},
				{"echo member-out; kill -TERM $$", 128 + 15},
			} {
				id := uniqueID("member-run-" + backend)
				var mutate []func(*rspec.Spec)
				if backend == "runc" {
					mutate = append(mutate, p.joinPid)
				}
				b := p.bundle(t, id, "container", []string{"sh", "-c", c.script}, mutate...)
				r := bulkhead(t, "", append(g, "run", "--bundle", b, id)...)
				if r.code != c.status || strings.TrimSpace(r.stdout) != "member-out" {
					t.Errorf("run of %q in the pod: exit %d, stdout %q; want %d and member-out\nstderr: %s", c.script, r.code, r.stdout, c.status, r.stderr)
				}
				if out := bulkhead(t, "", append(g, "state", id)...); out.code == 0 {
					t.Errorf("run of %q left the container behind: %s", c.script, out.stdout)
				}
			}
		})
	}
}
