package verify

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/specs"
)

// maxCwdDepth bounds the walk up from a working directory: PATH_MAX
// allows at most 2048 components.
const maxCwdDepth = 4096

// verifyCwd checks that pid's working directory lies inside its root: a
// cwd the backend resolved through a link the job swapped, on a runc that
// leaks a host directory's descriptor (CVE-2024-21626), is a host
// directory from which `..` walks the host's tree. The cwd rule resolves
// the path before the backend does, which a job racing it can pass; this
// is the evidence. The walk goes up by `..` from the cwd itself, as
// /proc/PID/cwd holds it, until it meets the process's root or stops
// rising.
func verifyCwd(r *Report, pid int, status ProcStatus) error {
	proc := "/proc/" + strconv.Itoa(pid)
	var root unix.Stat_t
	if err := unix.Stat(proc+"/root", &root); err != nil {
		return fmt.Errorf("verify: root of %d: %w", pid, err)
	}
	fd, err := unix.Open(proc+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("verify: cwd of %d: %w", pid, err)
	}
	observed := "outside the container's root"
	if target, err := os.Readlink(proc + "/cwd"); err == nil {
		observed += " (" + strconv.Quote(target) + " as the host sees it)"
	}
	who, err := searcherOf(pid, status)
	if err != nil {
		unix.Close(fd)
		return err
	}
	blocked, inside, err := walkToRoot(fd, &root, who)
	if err != nil {
		return fmt.Errorf("verify: cwd of %d: %w", pid, err)
	}
	if inside {
		observed = "inside the container's root"
	}
	r.add("cwd", "inside the container's root", observed)
	// runc enters the working directory before it drops to the process's
	// user, so a cwd inside a directory of a bind that user may not
	// search (alice's 0700 directory in a bound parent) gave the job her
	// files: every directory from it up to the root must let the user in.
	reached := "searchable by the process's user"
	if blocked != "" {
		reached = blocked + ": the backend entered it as root; give the job a cwd its user may reach"
	}
	r.add("cwd reached", "searchable by the process's user", reached)
	return nil
}

// CwdUnreachable says why the directory cwd, inside the root of a running
// container's process (/proc/PID/root), is one a process of uid, gid and
// groups may not reach by itself, or "": runc enters an exec's cwd as root
// before it drops to the user, and a short process has done its work
// before it can be verified. The check is of the tree as it is now; the
// verification after start reads where the process really is.
func CwdUnreachable(root, cwd string, uid, gid uint32, groups []uint32) (string, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(rfd)
	var rst unix.Stat_t
	if err := unix.Fstat(rfd, &rst); err != nil {
		return "", err
	}
	fd, err := unix.Openat2(rfd, cwd, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT})
	if errors.Is(err, unix.ENOENT) {
		return "", nil // the backend refuses a cwd that is not there
	}
	if err != nil {
		return "", fmt.Errorf("cwd %s: %w", cwd, err)
	}
	blocked, _, err := walkToRoot(fd, &rst, searcher{uid: uid, groups: append([]uint32{gid}, groups...), all: uid == 0})
	if err != nil {
		return "", fmt.Errorf("cwd %s: %w", cwd, err)
	}
	return blocked, nil
}

// walkToRoot walks up by ".." from the directory open at fd (which it
// closes) until it meets root or stops rising, and returns the first
// directory on the way who may not search, described ("" for none), and
// whether root was met.
func walkToRoot(fd int, root *unix.Stat_t, who searcher) (blocked string, inside bool, err error) {
	defer func() { unix.Close(fd) }()
	for depth := 0; depth < maxCwdDepth; depth++ {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return "", false, err
		}
		if blocked == "" && !who.maySearch(fd, &st) {
			dir, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
			blocked = fmt.Sprintf("%s (mode %04o, uid %d's, gid %d) is not searchable by uid %d", dir, st.Mode&0o7777, st.Uid, st.Gid, who.uid)
		}
		if st.Dev == root.Dev && st.Ino == root.Ino {
			return blocked, true, nil
		}
		up, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", false, fmt.Errorf("..: %w", err)
		}
		var ust unix.Stat_t
		if err := unix.Fstat(up, &ust); err != nil {
			unix.Close(up)
			return "", false, err
		}
		unix.Close(fd)
		fd = up
		if ust.Dev == st.Dev && ust.Ino == st.Ino {
			return blocked, false, nil // the top of the tree, which is not the root
		}
	}
	return blocked, false, nil
}

// searcher is whom the kernel checks a lookup for: the process's
// filesystem uid and its groups; all is a process whose capabilities
// pass every search (a root one, or CAP_DAC_OVERRIDE or
// CAP_DAC_READ_SEARCH).
type searcher struct {
	uid    uint32
	groups []uint32
	all    bool
}

// searcherOf is the searcher of pid, by its status (ReadProcStatus).
func searcherOf(pid int, st ProcStatus) (searcher, error) {
	var w searcher
	uids, gids := strings.Fields(st["Uid"]), strings.Fields(st["Gid"])
	if len(uids) != 4 || len(gids) != 4 {
		return searcher{}, fmt.Errorf("verify: status of %d: Uid %q, Gid %q", pid, st["Uid"], st["Gid"])
	}
	ids := append([]string{uids[3], gids[3]}, strings.Fields(st["Groups"])...)
	for i, v := range ids {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return searcher{}, fmt.Errorf("verify: status of %d: %q: %w", pid, v, err)
		}
		if i == 0 {
			w.uid = uint32(n)
		} else {
			w.groups = append(w.groups, uint32(n))
		}
	}
	eff, err := strconv.ParseUint(st["CapEff"], 16, 64)
	if err != nil {
		return searcher{}, fmt.Errorf("verify: status of %d: CapEff %q: %w", pid, st["CapEff"], err)
	}
	w.all = w.uid == 0 || eff&(1<<unix.CAP_DAC_OVERRIDE|1<<unix.CAP_DAC_READ_SEARCH) != 0
	return w, nil
}

// maySearch tells whether the searcher may look names up in the
// directory open at fd, by its mode: the owner's bits, the group's where
// it has no ACL (with one they are the mask, above what the group's own
// entry may allow), or the others'. An ACL's named entries for the user
// are not read: they count as denied.
func (w searcher) maySearch(fd int, st *unix.Stat_t) bool {
	switch {
	case w.all:
		return true
	case st.Uid == w.uid:
		return st.Mode&0o100 != 0
	case slices.Contains(w.groups, st.Gid) && st.Mode&0o010 != 0 && !specs.HasACL("/proc/self/fd/"+strconv.Itoa(fd)):
		return true
	}
	return st.Mode&0o001 != 0
}
