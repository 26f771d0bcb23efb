package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A command missing from the container fails its create on both
// backends, nothing left: runc looks it up in create itself, and runsc
// only in start, after which dockerd 20.10 forgot the created task with
// its shim, cgroups and bulkhead's mounts, so bulkhead looks it up for
// runsc in create. A command found only in a bind (a tools directory an
// engine mounts, on PATH) runs.
func TestMissingCommandFailsCreate(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {

		b := bundle.New(t, []string{"no-such-command"})
		id := uniqueID("no-cmd-" + backend)
		r := bulkhead(t, "", append(g, "create", "--bundle", b, id)...)
		if r.code == 0 {
			bulkhead(t, "", append(g, "delete", "--force", id)...)
			t.Fatalf("create of a container whose command is not in it succeeded on %s", backend)
		}
		if !strings.Contains(r.stderr, "no-such-command") {
			t.Fatalf("create refused, but the error does not name the command:\n%s", r.stderr)
		}
		if !strings.Contains(r.stderr, "process.args[0]") {
			t.Fatalf("create on %s refused, but not by naming process.args[0]:\n%s", backend, r.stderr)
		}
		assertGone(t, root, backend, id)
		// check answers as create does.
		if c := bulkhead(t, "", append(g, "check", "--bundle", b)...); c.code == 0 || !strings.Contains(c.stdout+c.stderr, "process.args[0]") {
			t.Fatalf("check of a container whose command is not in it on %s: exit %d, want refused as create is\nstdout: %s\nstderr: %s", backend, c.code, c.stdout, c.stderr)
		}

		tools := t.TempDir()
		if err := os.WriteFile(filepath.Join(tools, "lint"), []byte("#!/bin/sh\necho linted\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		b = bundle.New(t, []string{"lint"}, func(s *rspec.Spec) {
			s.Process.Env = []string{"PATH=/opt/tools:/bin"}
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/opt/tools", Type: "bind", Source: tools, Options: []string{"rbind", "ro"}})
		})
		id = uniqueID("tool-cmd-" + backend)
		r = bulkhead(t, "", append(g, "run", "--bundle", b, id)...)
		if r.code != 0 || !strings.Contains(r.stdout, "linted") {
			t.Fatalf("run of a command found through a bind on PATH: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		assertGone(t, root, backend, id)
	})
}
