package runtime

import (
	"slices"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/runtime/backend"
)

// TestGlobalsPerTarget: one set of globals, rendered for each target,
// gives each what it understands and bulkhead's children what they need
// to reach the same state and configuration.
func TestGlobalsPerTarget(t *testing.T) {
	g := &Globals{Root: "/run/x", Log: "/l.json", LogFormat: "json", Debug: true, SystemdCgroup: true,
		Rootless: "true", Criu: "/usr/sbin/criu", Profile: "gvisor", Backend: "runsc"}
	g.SetConfig("/etc/b.toml", true)
	g.criuJudged = true
	runc := g.backendArgv(&backend.Backend{Name: "runc", Path: "/usr/sbin/runc"}, "state", "id")
	runsc := g.backendArgv(&backend.Backend{Name: "runsc", Path: "/usr/bin/runsc"}, "state", "id")
	self := g.selfArgv("/bin/bulkhead", "watchdog", "id")
	for _, c := range []struct {
		name       string
		argv, want []string
		not        []string
	}{
		{"runc", runc, []string{"/usr/sbin/runc --root /run/x/runc", "--log /l.json", "--log-format json", "--debug", "--systemd-cgroup", "--rootless true", "--criu /usr/sbin/criu", "state id"},
			[]string{"--config", "--profile", "--backend", "--network=none"}},
		{"runsc", runsc, []string{"/usr/bin/runsc --root /run/x/runsc", "--log /l.json", "--rootless --network=none --oci-seccomp --overlay2=none state id"},
			[]string{"--criu", "--config", "--profile", "--rootless true"}},
		{"self", self, []string{"/bin/bulkhead --root /run/x", "--config /etc/b.toml", "--profile gvisor", "--backend runsc", "--debug", "--rootless true", "watchdog id"},
			[]string{"--log", "--criu", "--network=none"}},
	} {
		line := strings.Join(c.argv, " ")
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: %q lacks %q", c.name, line, w)
			}
		}
		for _, n := range c.not {
			if slices.Contains(c.argv, n) || strings.Contains(line, n+" ") {
				t.Errorf("%s: %q has %q", c.name, line, n)
			}
		}
	}
	// A configuration nobody named is not passed on: the child finds the
	// same default itself.
	g.SetConfig("/etc/b.toml", false)
	if slices.Contains(g.Args(ForSelf), "--config") {
		t.Error("an implicit configuration path was passed on")
	}
}
