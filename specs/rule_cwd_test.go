package specs

import (
	"os"
	"path/filepath"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleCwd(t *testing.T) {
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	for _, d := range []string{"rootfs/proc", "rootfs/work", "rootfs/etc"} {
		if err := os.MkdirAll(filepath.Join(bundle, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Absolute and relative links resolve inside the rootfs, as runc would.
	mustSymlink(t, "/proc/self/fd/7", filepath.Join(rootfs, "leak"))
	mustSymlink(t, "../proc", filepath.Join(rootfs, "work/up"))
	mustSymlink(t, "/etc", filepath.Join(rootfs, "cfg"))
	mustSymlink(t, "/dev/fd/7", filepath.Join(rootfs, "devleak"))

	inBundle := func(c *Context) { c.Bundle = bundle }
	cases := []struct {
		cwd    string
		action Action
	}{
		{"", Added},
		{"/", Kept},
		{"/work", Kept},
		{"/cfg", Kept},
		{"relative/dir", Refused},
		{"/proc/self/fd/7", Refused},
		{"/proc", Refused},
		{"/work/../proc/1/cwd", Refused},
		{"/leak", Refused},
		{"/work/up/self", Refused},
		{"/procfs", Kept},
		{"/dev/fd/7", Refused},
		{"/dev/stdin", Refused},
		{"/dev/../dev/fd/3", Refused},
		{"/devleak", Refused},
		{"/sys/fs/cgroup", Refused},
		{"/devices", Kept},
	}
	var rc []ruleCase
	for _, tc := range cases {
		rc = append(rc, ruleCase{name: "cwd " + tc.cwd, ctx: inBundle,
			spec: func(s *rspec.Spec) { s.Process.Cwd = tc.cwd },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.cwd", tc.action)
			}})
	}
	runRule(t, ruleCwd, rc)
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
