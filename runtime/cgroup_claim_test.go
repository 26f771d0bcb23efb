package runtime

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/specs"
)

// makeGroups makes the groups at paths (parents first) in every hierarchy
// of the host and removes them at the end.
func makeGroups(t *testing.T, paths ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	roots := []string{"/sys/fs/cgroup"}
	if cgroupsv3.Mode() != cgroupsv3.Unified {
		entries, err := os.ReadDir("/sys/fs/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		roots = nil
		for _, e := range entries {
			if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
				roots = append(roots, filepath.Join("/sys/fs/cgroup", e.Name()))
			}
		}
	}
	for _, p := range paths {
		for _, r := range roots {
			d := filepath.Join(r, p)
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(d) })
		}
	}
}

// TestClaimCgroupSystemdScope: the create-time re-check under the cgroup
// lock judges the scope's group under --systemd-cgroup, as the rule does,
// so a scope made between check and create is refused rather than joined
// by runc's systemd driver.
func TestClaimCgroupSystemdScope(t *testing.T) {
	slice := fmt.Sprintf("bhclaim%d.slice", os.Getpid())
	makeGroups(t, "/"+slice, "/"+slice+"/victim-x.scope")
	claim := func(cgroupsPath string) error {
		p := specs.DefaultProfile()
		c := &creation{g: &Globals{SystemdCgroup: true}, sel: &Selection{Profile: p},
			handed: &rspec.Spec{Linux: &rspec.Linux{CgroupsPath: cgroupsPath}},
			ctx: &specs.Context{Profile: &p, SystemdCgroup: true, CgroupTaken: cgroups.Taken,
				CgroupPopulated: func(path string) (bool, error) { return cgroups.Populated(path) }}}
		release, err := c.claimCgroup()
		if err == nil {
			release()
		}
		return err
	}
	err := claim(slice + ":victim:x")
	want := "(the systemd scope /" + slice + "/victim-x.scope): another container's create made it meanwhile"
	if err == nil || !strings.Contains(err.Error(), "rule cgroups_path refuses linux.cgroupsPath "+slice+":victim:x "+want) {
		t.Fatalf("claim of an existing scope: %v, want refused with %q", err, want)
	}
	if err := claim(slice + ":victim:y"); err != nil {
		t.Fatalf("claim of a new scope: %v", err)
	}
	if err := claim(slice + ":victim:z.slice"); err == nil || !strings.Contains(err.Error(), "ends in .slice") {
		t.Fatalf("claim of a slice name: %v", err)
	}
}

// TestCgroupLockIsPerPath: a claim locks its group alone (a byte chosen
// by a key only root reads) and the groups above it shared: a create of a sibling (dockerd's /docker/<id> beside
// another) does not wait, one of the same group or of a group above does
// until the claim is released, and one below may go on reading above.
func TestCgroupLockIsPerPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the host's cgroup lock file is root's")
	}
	top := fmt.Sprintf("/bhlock%d", os.Getpid())
	held, err := lockCgroupPath(top + "/a/b")
	if err != nil {
		t.Fatal(err)
	}
	// The bytes are chosen by a key only root reads, the same for every
	// bulkhead: no caller can name a group whose byte is another's.
	kf, key, err := openCgroupLock()
	if err != nil {
		t.Fatal(err)
	}
	kf.Close()
	if st, err := os.Stat(cgroupLockFile); err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("%s: %v, mode %v; want a file only root reads", cgroupLockFile, err, st.Mode())
	}
	if again, err := os.ReadFile(cgroupLockFile); err != nil || len(again) < cgroupLockKeySize || string(again[:cgroupLockKeySize]) != string(key) || cgroupLockByte(key, "/docker") == cgroupLockByte(make([]byte, cgroupLockKeySize), "/docker") {
		t.Fatalf("the key read is not the file's, or not used: %v", err)
	}
	// conflicts tells whether a lock of p (exclusive or shared) by another
	// create would wait now.
	conflicts := func(p string, exclusive bool) bool {
		t.Helper()
		f, err := os.OpenFile(cgroupLockFile, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: cgroupLockByte(key, p), Len: 1}
		if exclusive {
			lk.Type = unix.F_WRLCK
		}
		if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
			t.Fatal(err)
		}
		return lk.Type != unix.F_UNLCK
	}
	for _, c := range []struct {
		path      string
		exclusive bool
		want      bool
	}{
		{top + "/a/b", true, true},    // the same group
		{top + "/a/b", false, true},   // a group below it reads it
		{top + "/a", true, true},      // a group above it
		{top, true, true},             // the top
		{top + "/a", false, false},    // a sibling's create reads the parent
		{top + "/a/c", true, false},   // the sibling itself
		{top + "/other", true, false}, // unrelated
	} {
		if got := conflicts(c.path, c.exclusive); got != c.want {
			t.Errorf("while %s/a/b is claimed, a lock of %s (exclusive %v) waits: %v, want %v", top, c.path, c.exclusive, got, c.want)
		}
	}
	sibling, err := lockCgroupPath(top + "/a/c")
	if err != nil {
		t.Fatal(err)
	}
	sibling.Close()
	held.Close()
	if conflicts(top+"/a/b", true) || conflicts(top, true) {
		t.Errorf("released, the claim of %s/a/b still holds its locks", top)
	}
}

// TestRemoveMadeParentDoesNotWaitForACreate: a create below a group made
// for containers holds the group's lock shared while its backend makes its
// own group there. The delete of another container below it does not wait
// for that (creates following one another under dockerd's /docker would
// hold it back for good) and leaves the group, which the new container's
// delete removes; once no create is under way, the empty group goes.
func TestRemoveMadeParentDoesNotWaitForACreate(t *testing.T) {
	parent := fmt.Sprintf("/bhtry-%d", os.Getpid())
	markedAsMade(t, parent)
	create, err := lockCgroupPath(parent + "/creating")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		gone, err := removeMadeParent(parent)
		if err == nil && gone {
			err = fmt.Errorf("%s removed while a create below it was under way", parent)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		create.Close()
		t.Fatalf("the delete waited 30 s for the create below %s", parent)
	}
	create.Close()
	if !cgroups.Exists(parent) {
		t.Fatalf("%s is gone", parent)
	}
	if gone, err := removeMadeParent(parent); err != nil || !gone || cgroups.Exists(parent) {
		t.Fatalf("with no create under way: removed %v, %v; exists %v", gone, err, cgroups.Exists(parent))
	}
}

// TestRemoveMadeParentWaitsForAnotherDelete: deletes below one made group
// side by side each remove their own group and then try the parent's lock;
// one that finds another delete holding it waits for it, since that
// delete may have found this container's group still there and left the
// parent, and no delete after them would remove it.
func TestRemoveMadeParentWaitsForAnotherDelete(t *testing.T) {
	parent := fmt.Sprintf("/bhwait-%d", os.Getpid())
	markedAsMade(t, parent)
	other, err := lockCgroupPath(parent)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		other.Close()
	}()
	if gone, err := removeMadeParent(parent); err != nil || !gone || cgroups.Exists(parent) {
		t.Fatalf("after another delete let the lock go: removed %v, %v; exists %v", gone, err, cgroups.Exists(parent))
	}
}

// markedAsMade makes the group parent, marked as a backend's create of a
// container's group below it would have made it, and that container gone.
func markedAsMade(t *testing.T, parent string) {
	t.Helper()
	own := parent + "/container"
	makeGroups(t, parent, own)
	if got := markCreated(own, []groupDirs{{path: parent}}); len(got) != 1 {
		t.Fatalf("marked %v", got)
	}
	t.Cleanup(func() {
		if m, err := madeParentMarkers.path(parent); err == nil {
			os.Remove(m)
		}
	})
	dirs, err := cgroups.GroupDirs(own)
	if err != nil {
		t.Fatal(err)
	}
	for d := range dirs {
		if err := os.Remove(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := unmarkContainerGroup(own); err != nil {
		t.Fatal(err)
	}
	if m, err := containerGroupMarkers.path(own); err != nil {
		t.Fatal(err)
	} else if _, err := os.Lstat(m); !os.IsNotExist(err) {
		t.Fatalf("the container's marker %s is left (%v)", m, err)
	}
}
