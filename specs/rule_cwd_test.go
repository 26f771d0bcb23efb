package specs

import (
	"os"
	"path/filepath"
	"strings"
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
		// The kernel walks .. from the leaked directory, up the host's tree.
		{"/leak/../../../../etc", Refused},
		{"/work/up/../../../../etc", Refused},
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

// TestRuleCwdThroughMounts: cwd resolves as the container will see it,
// through the links in a bind's source as through the image's, and a
// bind hides what the image has beneath it.
func TestRuleCwdThroughMounts(t *testing.T) {
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	checkout := t.TempDir()
	cache := t.TempDir()
	for _, d := range []string{filepath.Join(rootfs, "workspace"), filepath.Join(checkout, "src"), filepath.Join(cache, "deps")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// What the checkout's author (or the job, before an exec) wrote.
	mustSymlink(t, "/proc/self/fd/7", filepath.Join(checkout, "evil"))
	mustSymlink(t, "../../dev/fd", filepath.Join(checkout, "src/up"))
	mustSymlink(t, "/etc", filepath.Join(checkout, "cfg"))
	mustSymlink(t, "/workspace/evil", filepath.Join(cache, "chain"))
	// Hidden under the bind at /workspace: never what runc resolves.
	mustSymlink(t, "/proc/self/fd/7", filepath.Join(rootfs, "workspace/hidden"))
	mustSymlink(t, "/tmp/x", filepath.Join(rootfs, "scratch"))

	spec := &rspec.Spec{
		Root: &rspec.Root{Path: "rootfs"},
		Mounts: []rspec.Mount{
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs"},
			{Destination: "/workspace", Type: "bind", Source: checkout, Options: []string{"rbind", "ro"}},
			{Destination: "/workspace/.cache", Source: cache, Options: []string{"bind"}},
		},
	}
	c := testContext()
	c.Bundle = bundle
	for _, tc := range []struct {
		cwd     string
		refused bool
	}{
		{"/workspace", false},
		{"/workspace/src", false},
		{"/workspace/cfg", false},
		{"/workspace/new/dir", false},
		{"/workspace/hidden", false},
		{"/tmp/build", false},
		{"/scratch", false},
		{"/workspace/evil", true},
		{"/workspace/evil/..", true}, // the kernel walks .. from the leaked directory
		{"/workspace/src/up/3", true},
		{"/workspace/.cache/chain", true},
		{"/workspace/.cache/deps", false},
	} {
		p := &rspec.Process{Cwd: tc.cwd}
		ds := checkCwd(p, viewOf(c, spec).resolve)
		if got := len(ds) == 1 && ds[0].Action == Refused; got != tc.refused {
			t.Errorf("cwd %s: refused=%v, want %v: %s", tc.cwd, got, tc.refused, dump(ds))
		}
	}
}

// A bind lands where its destination resolves when runc mounts it:
// through a link in the image, or in the source of a bind mounted before
// it. The cwd is judged where it really is then.
func TestRuleCwdBindMovedByALink(t *testing.T) {
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	if err := os.MkdirAll(filepath.Join(rootfs, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "/x", filepath.Join(rootfs, "b"))
	leaky, checkout := t.TempDir(), t.TempDir()
	mustSymlink(t, "/proc/self", filepath.Join(leaky, "y"))
	mustSymlink(t, "/x", filepath.Join(checkout, "l"))
	c := testContext()
	c.Bundle = bundle
	for name, mounts := range map[string][]rspec.Mount{
		"through the image's link": {{Destination: "/b", Type: "bind", Source: leaky, Options: []string{"bind", "ro"}}},
		"through an earlier bind's link": {
			{Destination: "/a", Type: "bind", Source: checkout, Options: []string{"bind", "ro"}},
			{Destination: "/a/l", Type: "bind", Source: leaky, Options: []string{"bind", "ro"}},
		},
	} {
		spec := &rspec.Spec{Root: &rspec.Root{Path: "rootfs"}, Mounts: mounts}
		ds := checkCwd(&rspec.Process{Cwd: "/x/y"}, viewOf(c, spec).resolve)
		if len(ds) != 1 || ds[0].Action != Refused {
			t.Errorf("%s: cwd /x/y kept: %s", name, dump(ds))
		}
	}
}

// runc opens a bind's source where the host resolves it: a source given
// through a host link is read at the directory it names.
func TestRuleCwdBindSourceThroughAHostLink(t *testing.T) {
	bundle := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bundle, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	host := t.TempDir()
	if err := os.Mkdir(filepath.Join(host, "realdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "realdir", filepath.Join(host, "lnk"))
	mustSymlink(t, "/proc/self/fd", filepath.Join(host, "realdir/sub"))
	spec := &rspec.Spec{Root: &rspec.Root{Path: "rootfs"},
		Mounts: []rspec.Mount{{Destination: "/data", Type: "bind", Source: filepath.Join(host, "lnk"), Options: []string{"bind", "ro"}}}}
	c := testContext()
	c.Bundle = bundle
	ds := checkCwd(&rspec.Process{Cwd: "/data/sub"}, viewOf(c, spec).resolve)
	if len(ds) != 1 || ds[0].Action != Refused {
		t.Errorf("cwd /data/sub kept: %s", dump(ds))
	}
}

// TestRuleCwdShowsTheJobsLinkEscaped: at an exec the path a refusal shows
// comes through links the job wrote; it reaches the caller's terminal
// quoted, not as the escape sequences and line breaks the job chose.
func TestRuleCwdShowsTheJobsLinkEscaped(t *testing.T) {
	p := &rspec.Process{Cwd: "/workspace/x"}
	ds := checkCwd(p, func(string) (string, error) { return "/proc/\x1b[2K\rOK\nfake line", nil })
	if len(ds) != 1 || ds[0].Action != Refused {
		t.Fatalf("decisions %+v, want one refusal", ds)
	}
	if strings.ContainsAny(ds[0].Why, "\x1b\r\n") || !strings.Contains(ds[0].Why, `"/proc/\x1b[2K\rOK\nfake line"`) {
		t.Errorf("refusal %q does not show the resolved path quoted", ds[0].Why)
	}
}

// Bidi controls and zero-width spaces from the job's link reach the
// caller's terminal escaped too: they reorder or hide what is read.
func TestRuleCwdShowsHiddenRunesEscaped(t *testing.T) {
	p := &rspec.Process{Cwd: "/workspace/x"}
	ds := checkCwd(p, func(string) (string, error) { return "/proc/\u202esys\u200b", nil })
	if len(ds) != 1 || ds[0].Action != Refused {
		t.Fatalf("decisions %+v, want one refusal", ds)
	}
	if strings.ContainsAny(ds[0].Why, "\u202e\u200b") || !strings.Contains(ds[0].Why, `"/proc/\u202esys\u200b"`) {
		t.Errorf("refusal %q does not show the resolved path escaped", ds[0].Why)
	}
}
