package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/runtime/seccompexec"
	"bulkhead.dev/bulkhead/specs"
	"bulkhead.dev/bulkhead/test/bundle"
)

func TestPlanSeccompExecBindsReadOnly(t *testing.T) {
	s := &rspec.Spec{}
	d, err := planSeccompExec(s, t.TempDir(), bundle.Busybox)
	if err != nil {
		t.Fatal(err)
	}
	if !hasSeccompExec(s) || d.Field != "mounts["+seccompexec.Path+"]" {
		t.Fatalf("mounts %+v, decision %+v", s.Mounts, d)
	}
	m := s.Mounts[len(s.Mounts)-1]
	if m.Source != bundle.Busybox || strings.Join(m.Options, ",") != "bind,ro,nosuid,nodev" {
		t.Errorf("mount %+v, want a ro,nosuid,nodev bind of %s", m, bundle.Busybox)
	}
}

// TestPlanSeccompExecRefuses: nothing of the caller's may stand where the
// program goes, and the program must be a file only root can change.
func TestPlanSeccompExecRefuses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the program must be root's file: needs root to make one")
	}
	tmp := t.TempDir()
	symlinked := filepath.Join(tmp, "symlinked")
	if err := os.MkdirAll(filepath.Join(symlinked, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("tmp", filepath.Join(symlinked, ".bulkhead")); err != nil {
		t.Fatal(err)
	}
	writable := filepath.Join(tmp, "writable")
	if err := os.WriteFile(writable, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(writable, 0o775); err != nil {
		t.Fatal(err)
	}
	notRoots := filepath.Join(tmp, "not-roots")
	if err := os.WriteFile(notRoots, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(notRoots, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	// Root's program in a directory another user owns: theirs to swap.
	usersDir := filepath.Join(tmp, "users")
	if err := os.Mkdir(usersDir, 0o755); err != nil {
		t.Fatal(err)
	}
	inUsersDir := filepath.Join(usersDir, "bulkhead-seccomp-exec")
	if err := os.WriteFile(inUsersDir, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(usersDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		mounts      []rspec.Mount
		rootfs, src string
		why         string
	}{
		"in another's directory": {rootfs: tmp, src: inUsersDir, why: "uid 65534"},
		"symlinked directory":    {rootfs: symlinked, src: bundle.Busybox, why: "not a directory"},
		"missing program":        {rootfs: tmp, src: filepath.Join(tmp, "absent"), why: "make install"},
		"a directory":            {rootfs: tmp, src: tmp, why: "not a regular file"},
		"group-writable":         {rootfs: tmp, src: writable, why: "writable by group or others"},
		"not root's":             {rootfs: tmp, src: notRoots, why: "not root"},
	} {
		s := &rspec.Spec{Mounts: tc.mounts}
		_, err := planSeccompExec(s, tc.rootfs, tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v, want a refusal saying %q", name, err, tc.why)
		}
		if len(s.Mounts) != len(tc.mounts) {
			t.Errorf("%s: refused, yet the bind was added", name)
		}
	}
}

// TestOwnPlaceRefusal: the program's mount point in the image may be
// absent or a plain file in root's directories, nothing else: a symlink
// there carried the mount into /tmp, where the workload swapped it.
func TestOwnPlaceRefusal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the root filesystem's directories must be root's")
	}
	for _, c := range []struct {
		name   string
		make   func(t *testing.T, rootfs string)
		refuse bool
	}{
		{"absent", func(t *testing.T, rootfs string) {}, false},
		{"empty directory", func(t *testing.T, rootfs string) { mkdirAll(t, filepath.Join(rootfs, ".bulkhead"), 0o755) }, false},
		{"plain file", func(t *testing.T, rootfs string) {
			mkdirAll(t, filepath.Join(rootfs, ".bulkhead"), 0o755)
			writeFile(t, filepath.Join(rootfs, ".bulkhead", "seccomp-exec"))
		}, false},
		{"symlink into /tmp", func(t *testing.T, rootfs string) {
			mkdirAll(t, filepath.Join(rootfs, ".bulkhead"), 0o755)
			for _, name := range []string{"seccomp-exec", "egress-forward"} {
				if err := os.Symlink("/tmp/d/x", filepath.Join(rootfs, ".bulkhead", name)); err != nil {
					t.Fatal(err)
				}
			}
		}, true},
		{"directory others may write", func(t *testing.T, rootfs string) { mkdirAll(t, filepath.Join(rootfs, ".bulkhead"), 0o777) }, true},
		{"root others may write", func(t *testing.T, rootfs string) {
			if err := os.Chmod(rootfs, 0o1777); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rootfs := filepath.Join(t.TempDir(), "rootfs")
			mkdirAll(t, rootfs, 0o755)
			c.make(t, rootfs)
			for _, path := range []string{seccompexec.Path, egressForwarderPath} {
				if why := ownPlaceRefusal(rootfs, path); (why != "") != c.refuse {
					t.Errorf("%s: refusal %q, want refused %v", path, why, c.refuse)
				}
			}
		})
	}
}

func mkdirAll(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestOwnProgramsInOwnDir: the mounts rule keeps every caller's mount out
// of specs.OwnDir, and that holds for bulkhead's programs only while they
// are bound there.
func TestOwnProgramsInOwnDir(t *testing.T) {
	for _, path := range []string{seccompexec.Path, egressForwarderPath} {
		if filepath.Dir(path) != specs.OwnDir {
			t.Errorf("%s is not in %s, which the mounts rule keeps", path, specs.OwnDir)
		}
	}
}
