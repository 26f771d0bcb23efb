package specs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestCommandMissing: a command is looked up as the backend looks it up,
// in the container as it will be laid out (the image, binds over it, links
// followed inside), and only a certain absence is named.
func TestCommandMissing(t *testing.T) {
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	tools := t.TempDir()
	for _, d := range []string{"bin", "usr/bin", "workspace", "opt", "etc"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(rootfs, "bin/sh"), 0o755)
	write(filepath.Join(rootfs, "etc/motd"), 0o644)
	write(filepath.Join(tools, "lint"), 0o755)
	write(filepath.Join(tools, "notes"), 0o644)
	write(filepath.Join(rootfs, "opt/hidden"), 0o755) // under the bind at /opt
	mustSymlink(t, "/bin/sh", filepath.Join(rootfs, "usr/bin/env-sh"))
	mustSymlink(t, "/nowhere", filepath.Join(rootfs, "usr/bin/dangling"))
	mustSymlink(t, "/proc/self/exe", filepath.Join(rootfs, "usr/bin/self"))
	mustSymlink(t, "loop", filepath.Join(rootfs, "usr/bin/loop"))

	spec := func(args []string, cwd string, env ...string) *rspec.Spec {
		return &rspec.Spec{
			Root:    &rspec.Root{Path: "rootfs"},
			Process: &rspec.Process{Args: args, Cwd: cwd, Env: env},
			Mounts: []rspec.Mount{
				{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs"},
				{Destination: "/opt", Type: "bind", Source: tools, Options: []string{"rbind", "ro"}},
			},
		}
	}
	c := testContext()
	c.Bundle = bundle
	const both, runcOnly, gvisorOnly = 0, 1, 2
	for _, tc := range []struct {
		name    string
		s       *rspec.Spec
		missing bool
		on      int
	}{
		{"in PATH", spec([]string{"sh"}, "/", "PATH=/usr/bin:/bin"), false, both},
		{"absolute", spec([]string{"/bin/sh"}, "/"), false, both},
		{"relative to cwd", spec([]string{"./sh"}, "/bin"), false, both},
		{"through a link in the image", spec([]string{"env-sh"}, "/", "PATH=/usr/bin"), false, both},
		{"in a bind", spec([]string{"lint"}, "/", "PATH=/opt:/bin"), false, both},
		{"runc: in the last PATH entry", spec([]string{"lint"}, "/", "PATH=/bin", "PATH=/opt"), false, runcOnly},
		{"gVisor: not in the first PATH entry", spec([]string{"lint"}, "/", "PATH=/bin", "PATH=/opt"), true, gvisorOnly},
		{"gVisor: in the first PATH entry", spec([]string{"lint"}, "/", "PATH=/opt", "PATH=/bin"), false, gvisorOnly},
		{"runc: not in the last PATH entry", spec([]string{"lint"}, "/", "PATH=/opt", "PATH=/bin"), true, runcOnly},
		{"no PATH: no default", spec([]string{"sh"}, "/"), true, both},
		{"on a tmpfs: cannot tell", spec([]string{"/tmp/build/run"}, "/"), false, both},
		{"into /proc: cannot tell", spec([]string{"self"}, "/", "PATH=/usr/bin"), false, both},
		{"not there", spec([]string{"no-such-command"}, "/", "PATH=/usr/bin:/bin"), true, both},
		{"absolute, not there", spec([]string{"/bin/bash"}, "/"), true, both},
		{"relative to cwd, not there", spec([]string{"./run.sh"}, "/workspace"), true, both},
		{"hidden by a bind", spec([]string{"/opt/hidden"}, "/"), true, both},
		{"not executable", spec([]string{"/etc/motd"}, "/"), true, both},
		{"not executable in a bind", spec([]string{"notes"}, "/", "PATH=/opt"), true, both},
		{"a directory", spec([]string{"bin"}, "/", "PATH=/"), true, both},
		{"a dangling link", spec([]string{"dangling"}, "/", "PATH=/usr/bin"), true, both},
		{"a relative PATH entry is not searched", spec([]string{"sh"}, "/", "PATH=bin"), true, both},
		{"under a file", spec([]string{"/etc/motd/x"}, "/"), true, both},
		{"a link to itself", spec([]string{"loop"}, "/", "PATH=/usr/bin"), true, both},
	} {
		for _, gvisor := range []bool{false, true} {
			if tc.on == runcOnly && gvisor || tc.on == gvisorOnly && !gvisor {
				continue
			}
			why := CommandMissing(c, tc.s, gvisor)
			if (why != "") != tc.missing {
				t.Errorf("%s (gVisor %v): CommandMissing = %q, want missing=%v", tc.name, gvisor, why, tc.missing)
			}
			if why != "" && !strings.Contains(why, tc.s.Process.Args[0]) {
				t.Errorf("%s: %q does not name the command", tc.name, why)
			}
		}
	}
}

// A PATH of many directories is searched once each and named in short.
func TestCommandMissingLongPath(t *testing.T) {
	bundle := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bundle, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i := 0; i < 50; i++ {
		dirs = append(dirs, "/d"+strconv.Itoa(i), "/d"+strconv.Itoa(i))
	}
	s := &rspec.Spec{Root: &rspec.Root{Path: "rootfs"},
		Process: &rspec.Process{Args: []string{"tool"}, Cwd: "/", Env: []string{"PATH=" + strings.Join(dirs, ":")}}}
	c := testContext()
	c.Bundle = bundle
	why := CommandMissing(c, s, false)
	if !strings.Contains(why, "/d7/tool, and 42 more)") || strings.Contains(why, "/d8/") {
		t.Errorf("CommandMissing = %q, want the first 8 of 50 directories and a count", why)
	}
}
