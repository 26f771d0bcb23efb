package verify

import (
	"bufio"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A process whose working directory lies outside its root, as a cwd
// through a leaked host descriptor leaves it, fails the cwd check; one
// inside passes.
func TestVerifyCwdOutsideRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: chroot needs root")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to chroot a process here (hack/install-deps.sh installs it): %v", err)
	}
	jail := t.TempDir()
	if err := os.MkdirAll(filepath.Join(jail, "proc", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, chdir string
		inside      bool
	}{
		{"outside", "/", false},
		{"inside", jail, true},
		// A created init's cwd under /proc: runc entered a path a link
		// swapped after the rule resolved it.
		{"under /proc", filepath.Join(jail, "proc", "1"), false},
	} {
		// chroot(2) leaves the cwd where it was.
		r := verifyCwdOf(t, py, "os.chdir(sys.argv[2]); os.chroot(sys.argv[1])", jail, c.chdir)
		if len(r) != 2 || r[0].Control != "cwd" || r[0].OK != c.inside {
			t.Fatalf("%s: %+v, want the check ok=%v", c.name, r, c.inside)
		}
		if c.name == "under /proc" && r[0].Observed != "inside the container's root, under /proc" {
			t.Fatalf("%s: observed %q, want it to name /proc", c.name, r[0].Observed)
		}
		if c.name == "outside" && !strings.Contains(r[0].Observed, `outside the container's root ("/"`) {
			t.Fatalf("%s: observed %q, want it to name the host's path", c.name, r[0].Observed)
		}
	}
}

// runc enters the working directory as root before it drops to the
// process's user: a cwd inside a directory the user may not search fails
// the check, one whose every directory lets the user in passes.
func TestVerifyCwdReachedByTheUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: changing to another user needs root")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to start a process as another user here (hack/install-deps.sh installs it): %v", err)
	}
	base, err := os.MkdirTemp("", "bh-cwd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	alice := filepath.Join(base, "alice")
	sub := filepath.Join(alice, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(alice, 1500, 1500); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode    os.FileMode
		reached bool
	}{{0o700, false}, {0o711, true}} {
		if err := os.Chmod(alice, c.mode); err != nil {
			t.Fatal(err)
		}
		r := verifyCwdOf(t, py, "os.chdir(sys.argv[1]); os.setgroups([]); os.setgid(65534); os.setuid(65534)", sub)
		if len(r) != 2 || r[1].Control != "cwd reached" || r[1].OK != c.reached {
			t.Fatalf("%04o: %+v, want the cwd reached check ok=%v", c.mode, r, c.reached)
		}
		if !c.reached && !strings.Contains(r[1].Observed, alice+" (mode 0700, uid 1500's, gid 1500) is not searchable by uid 65534") {
			t.Fatalf("%04o: observed %q, want it to name %s", c.mode, r[1].Observed, alice)
		}
	}
}

// verifyCwdOf runs setup (Python, with os and sys imported, argv after
// it) in a process that then waits, and verifies that process's cwd.
func verifyCwdOf(t *testing.T, py, setup string, args ...string) Report {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-c", "import os, time, sys; " + setup + "; print('ok', flush=True); time.sleep(60)"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready, rerr := bufio.NewReader(out).ReadString('\n')
	var r Report
	st, verr := ReadProcStatus(cmd.Process.Pid)
	if verr == nil {
		verr = verifyCwd(&r, cmd.Process.Pid, st, true)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if rerr != nil || ready != "ok\n" {
		t.Fatalf("the process set up by %q did not start: %v %q", setup, rerr, ready)
	}
	if verr != nil {
		t.Fatalf("%q: %v", setup, verr)
	}
	return r
}

// TestJudgeExecCwd: a cwd its user may not reach is blocked; one whose
// path a user other than root could change before runc enters it (a
// directory others may write, a link or ".." on the way) comes back open,
// the directory judged; a path only root may change comes back as none.
func TestJudgeExecCwd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: a directory only root may change must be root's")
	}
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"fixed/sub", "open/sub", "alice/sub"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(base, "open"), 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(base, "alice"), 1500, 1500); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(base, "alice"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/fixed/sub", filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	// The kernel's own rules, which a reading of the mode bits missed: an
	// ACL's entry for the user decides before the others' bits, and a
	// group the user is in decides by its bits alone.
	for _, d := range []struct {
		name string
		gid  uint32
		mode os.FileMode
		acl  []byte
	}{
		{"named", 1500, 0o701, aclValue([][3]uint32{{0x01, 7, aclUndefined}, {0x02, 0, 65534}, {0x04, 0, aclUndefined}, {0x10, 1, aclUndefined}, {0x20, 1, aclUndefined}})},
		{"grp", 65534, 0o701, nil},
		{"grpok", 65534, 0o710, nil},
	} {
		dir := filepath.Join(base, d.name)
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 1500, int(d.gid)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, d.mode); err != nil {
			t.Fatal(err)
		}
		if d.acl != nil {
			if err := unix.Setxattr(dir, "system.posix_acl_access", d.acl, 0); err != nil {
				t.Fatalf("set an ACL on %s: %v", dir, err)
			}
		}
	}
	for _, c := range []struct {
		cwd, opened string
		blocked     bool
	}{
		{"/fixed/sub", "", false},
		{"/", "", false},
		{"/open/sub", "open/sub", false},
		{"/open", "", false},
		{"/link", "fixed/sub", false},
		{"/fixed/../fixed/sub", "fixed/sub", false},
		{"/alice/sub", "alice/sub", true},
		{"/named/sub", "named/sub", true},
		{"/grp/sub", "grp/sub", true},
		{"/grpok/sub", "grpok/sub", false}, // uid 1500 may change it
	} {
		j, err := JudgeExecCwd(base, c.cwd, 65534, 65534, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.cwd, err)
		}
		if (j.Blocked != "") != c.blocked {
			t.Errorf("%s: blocked %q, want blocked %v", c.cwd, j.Blocked, c.blocked)
		}
		if (j.Dir != nil) != (c.opened != "") {
			t.Errorf("%s: opened %v, want %q", c.cwd, j.Dir != nil, c.opened)
			continue
		}
		if j.Dir == nil {
			continue
		}
		var got, want unix.Stat_t
		if err := unix.Fstat(int(j.Dir.Fd()), &got); err != nil {
			t.Fatal(err)
		}
		if err := unix.Stat(filepath.Join(base, c.opened), &want); err != nil {
			t.Fatal(err)
		}
		if got.Ino != want.Ino || got.Dev != want.Dev {
			t.Errorf("%s: the open directory is not %s", c.cwd, c.opened)
		}
		j.Dir.Close()
	}
	// A directory in a tree the runtime makes is named, however the path
	// led there: the rule resolved it before the job swapped a link.
	for _, d := range []string{"proc/1", "dev/shm/x", "sys/fs/cgroup", "procfs/sub"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/proc/1", filepath.Join(base, "tolink")); err != nil {
		t.Fatal(err)
	}
	for cwd, under := range map[string]string{"/proc/1": "/proc", "/proc": "/proc", "/tolink": "/proc", "/dev/shm/x": "/dev",
		"/sys/fs/cgroup": "/sys", "/procfs/sub": "", "/fixed/sub": ""} {
		j, err := JudgeExecCwd(base, cwd, 65534, 65534, nil)
		if err != nil {
			t.Fatalf("%s: %v", cwd, err)
		}
		if j.Under != under {
			t.Errorf("%s: under %q, want %q", cwd, j.Under, under)
		}
		if j.Dir != nil {
			j.Dir.Close()
		}
	}
	// A root job without capabilities is held to the modes as the kernel
	// holds it: runc enters the cwd with its capabilities, the job has none.
	if j, err := JudgeExecCwd(base, "/alice/sub", 0, 0, nil); err != nil || j.Blocked == "" {
		t.Errorf("/alice/sub for uid 0 without capabilities: %+v, %v; want it blocked", j, err)
	}
	// The job could make a missing cwd before runc looks for it.
	if _, err := JudgeExecCwd(base, "/missing", 65534, 65534, nil); !errors.Is(err, ErrNoCwd) {
		t.Errorf("/missing: %v, want ErrNoCwd", err)
	}
	// A root gone with its process (the container stopped) is no answer
	// about the cwd.
	if _, err := JudgeExecCwd(filepath.Join(base, "gone"), "/alice", 65534, 65534, nil); err == nil || errors.Is(err, ErrNoCwd) {
		t.Errorf("a root that is not there: %v, want an error other than ErrNoCwd", err)
	}
}

const aclUndefined = 0xffffffff

// aclValue is a system.posix_acl_access value of entries {tag, perm, id}.
func aclValue(entries [][3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// TestSearcherOfTakesCapabilitiesNotTheUid: only CAP_DAC_OVERRIDE or
// CAP_DAC_READ_SEARCH in the effective set pass every search; uid 0 with
// none is searched for as any user is.
func TestSearcherOfTakesCapabilitiesNotTheUid(t *testing.T) {
	for _, c := range []struct {
		uid, capEff string
		all         bool
	}{
		{"0", "0000000000000000", false},
		{"0", "0000000000000004", true}, // CAP_DAC_READ_SEARCH
		{"65534", "0000000000000002", true},
		{"65534", "0000000000000000", false},
	} {
		st := ProcStatus{"Uid": strings.Repeat(c.uid+"\t", 4), "Gid": "0\t0\t0\t0", "Groups": "", "CapEff": c.capEff}
		w, err := searcherOf(1, st)
		if err != nil {
			t.Fatal(err)
		}
		if w.all != c.all {
			t.Errorf("uid %s, CapEff %s: all %v, want %v", c.uid, c.capEff, w.all, c.all)
		}
	}
}
