package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// runsc flags that open the sandbox's boundary are refused wherever they
// come from. --host-uds=all let a job connect to host sockets, where
// runsc answered as root, and an overlay took the job's writes past its
// caps into memory or a host file, and doctor and create's verification
// said ok:
// in the configuration's args it is refused before runsc runs; added by
// a wrapper bulkhead cannot read, create's verification finds it on the
// sandbox's own command line, and nothing is left.
func TestRunscFlagsThatOpenTheBoundary(t *testing.T) {
	needRoot(t, "runsc")
	runsc, err := exec.LookPath("runsc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "bin", "runsc")
	if err := os.MkdirAll(filepath.Dir(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nexec "+runsc+" --host-uds=all \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// An overlay takes the job's writes out of the capped layers into
	// memory or a host file no cgroup counts.
	overlaid := filepath.Join(dir, "overlaid", "runsc")
	if err := os.MkdirAll(filepath.Dir(overlaid), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overlaid, []byte("#!/bin/sh\nexec "+runsc+" --overlay=true \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, backend, want string
	}{
		{"args", fmt.Sprintf("path = %q\nargs = [\"--platform=ptrace\", \"--host-uds=all\"]", runsc), "backend runsc: args: --host-uds=all is not a runsc flag"},
		{"overlay in args", fmt.Sprintf("path = %q\nargs = [\"--platform=ptrace\", \"--overlay2=all:%s\"]", runsc, dir), "--overlay2 may be only none"},
		{"wrapper", fmt.Sprintf("path = %q\nargs = [\"--platform=ptrace\"]", wrapper), "control runsc flags"},
		{"overlay by a wrapper", fmt.Sprintf("path = %q\nargs = [\"--platform=ptrace\"]", overlaid), "control runsc flags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(config, []byte("[backends.runsc]\n"+tc.backend+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			root := stateRoot(t)
			g := []string{"--config", config, "--root", root, "--backend", "runsc"}
			id := uniqueID("runsc-flags-" + strings.ReplaceAll(tc.name, " ", "-"))
			r := bulkhead(t, "", append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "60"}), id)...)
			if r.code == 0 {
				bulkhead(t, "", append(g, "delete", "--force", id)...)
				t.Fatalf("a runsc with a flag that opens the boundary was handed the container")
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("refused, but not for the flag (want %q):\n%s", tc.want, r.stderr)
			}
			assertGone(t, root, "runsc", id)
		})
	}
}
