package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

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
// rising. A created init has run none of the job's code: its cwd is the
// one runc entered, which must not lie under /proc, /dev or /sys either
// (a pod-mate can swap a link in a volume both share between the rule's
// resolution and runc's); inRuntimeTree asks for that. An exec'd process
// may have moved there itself.
func verifyCwd(r *Report, pid int, status ProcStatus, inRuntimeTree bool) error {
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
	w, err := walkToRoot(fd, &root, who, false)
	if err != nil {
		return fmt.Errorf("verify: cwd of %d: %w", pid, err)
	}
	if w.inside {
		observed = "inside the container's root"
	}
	if w.inside && inRuntimeTree && w.top != nil {
		rfd, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("verify: root of %d: %w", pid, err)
		}
		under, err := runtimeTree(rfd, w.top)
		unix.Close(rfd)
		if err != nil {
			return fmt.Errorf("verify: cwd of %d: %w", pid, err)
		}
		if under != "" {
			observed += ", under " + under
		}
	}
	r.add("cwd", "inside the container's root", observed)
	// runc enters the working directory before it drops to the process's
	// user, so a cwd inside a directory of a bind that user may not
	// search (alice's 0700 directory in a bound parent) gave the job her
	// files: every directory from it up to the root must let the user in.
	reached := "searchable by the process's user"
	if w.blocked != "" {
		reached = w.blocked + ": the backend entered it as root; give the job a cwd its user may reach"
	}
	r.add("cwd reached", "searchable by the process's user", reached)
	return nil
}

// ExecCwd is an exec's cwd as judged in the running container's tree.
type ExecCwd struct {
	// Blocked says why the process's user may not reach the directory by
	// itself ("" when it may): runc enters an exec's cwd as root before
	// it drops to the user, and a short process has done its work before
	// it can be verified.
	Blocked string
	// Dir is the directory judged, open, where the job could make the
	// path name another one by the time runc enters it: a link or ".."
	// on the way, or a directory on the way that a user other than root
	// may write (/tmp, a workspace). runc is to enter Dir, not the path.
	// nil when the path is fixed or names nothing.
	Dir *os.File
	// Under names the tree the runtime makes (/proc, /dev or /sys) that
	// the directory judged lies in, "" for none: the cwd rule refuses a
	// path that resolves there, and a job swapping a link between that
	// resolution and this one leads the path there after all.
	Under string
}

// ErrNoCwd is JudgeExecCwd's answer for a cwd that is not in the
// container's tree, apart from a root that is gone with its process.
var ErrNoCwd = errors.New("no such directory in the container")

// JudgeExecCwd judges the directory cwd inside root, the root of a
// running container's process (/proc/PID/root), for a process of uid,
// gid and groups without a capability that passes every search (the
// caller exempts one with).
func JudgeExecCwd(root, cwd string, uid, gid uint32, groups []uint32) (ExecCwd, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ExecCwd{}, fmt.Errorf("the container's root: %w", err)
	}
	defer unix.Close(rfd)
	var rst unix.Stat_t
	if err := unix.Fstat(rfd, &rst); err != nil {
		return ExecCwd{}, err
	}
	// A cwd that is not there cannot be handed over open, and the job
	// may make it before runc looks: it is refused (ENOENT).
	fd, err := unix.Openat2(rfd, cwd, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT})
	if errors.Is(err, unix.ENOENT) {
		return ExecCwd{}, fmt.Errorf("cwd %s: %w", cwd, ErrNoCwd)
	}
	if err != nil {
		return ExecCwd{}, fmt.Errorf("cwd %s: %w", cwd, err)
	}
	dir := os.NewFile(uintptr(fd), cwd)
	defer func() {
		if dir != nil {
			dir.Close()
		}
	}()
	up, err := unix.FcntlInt(dir.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return ExecCwd{}, fmt.Errorf("cwd %s: %w", cwd, err)
	}
	w, err := walkToRoot(up, &rst, searcher{uid: uid, groups: append([]uint32{gid}, groups...)}, true)
	if err != nil {
		return ExecCwd{}, fmt.Errorf("cwd %s: %w", cwd, err)
	}
	if !w.inside {
		// The walk stopped before the root (deeper than maxCwdDepth):
		// the directories above were not judged.
		return ExecCwd{}, fmt.Errorf("cwd %s: the walk up from it did not meet the container's root", cwd)
	}
	j := ExecCwd{Blocked: w.blocked}
	if w.top != nil {
		if j.Under, err = runtimeTree(rfd, w.top); err != nil {
			return ExecCwd{}, fmt.Errorf("cwd %s: %w", cwd, err)
		}
	}
	if w.writable || cwd != filepath.Clean(cwd) || !sameDirNoLinks(rfd, cwd, dir) {
		j.Dir = dir
		dir = nil // the caller's to close now
	}
	return j, nil
}

// runtimeTree names the tree the runtime makes over the image (/proc, /dev
// or /sys, as mounted in the container's root) whose top directory is
// top, "" for none. The root is read-only: the job cannot move these.
func runtimeTree(root int, top *unix.Stat_t) (string, error) {
	for _, name := range []string{"proc", "dev", "sys"} {
		fd, err := unix.Openat2(root, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("/%s of the container: %w", name, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return "", err
		}
		if st.Dev == top.Dev && st.Ino == top.Ino {
			return "/" + name, nil
		}
	}
	return "", nil
}

// sameDirNoLinks tells whether cwd resolves in root to dir without
// following a link.
func sameDirNoLinks(root int, cwd string, dir *os.File) bool {
	fd, err := unix.Openat2(root, cwd, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var a, b unix.Stat_t
	return unix.Fstat(fd, &a) == nil && unix.Fstat(int(dir.Fd()), &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// walked is what walkToRoot found: the first directory on the way the
// searcher may not search, described ("" for none); whether the root was
// met; whether a directory above the first is one a user other than root
// may write, whose entries can change under a path through it; and the
// directory of the way that lies in the root itself (nil for the root).
type walked struct {
	blocked  string
	inside   bool
	writable bool
	top      *unix.Stat_t
}

// walkToRoot walks up by ".." from the directory open at fd (which it
// closes) until it meets root or stops rising; writers asks it to tell
// walked.writable. Whether who may search each directory on the way is
// the kernel's answer (searcher.firstDenied), asked once the way is known.
func walkToRoot(fd int, root *unix.Stat_t, who searcher, writers bool) (w walked, err error) {
	var way []int // the directories from the start up, open
	var stats []unix.Stat_t
	defer func() {
		for _, d := range way {
			unix.Close(d)
		}
	}()
	for depth := 0; depth < maxCwdDepth; depth++ {
		way = append(way, fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return walked{}, err
		}
		stats = append(stats, st)
		if writers && depth > 0 && !w.writable && othersMayWrite(fd, &st) {
			w.writable = true
		}
		if st.Dev == root.Dev && st.Ino == root.Ino {
			w.inside = true
			if depth > 0 {
				w.top = &stats[depth-1]
			}
			break
		}
		up, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return walked{}, fmt.Errorf("..: %w", err)
		}
		var ust unix.Stat_t
		if err := unix.Fstat(up, &ust); err != nil {
			unix.Close(up)
			return walked{}, err
		}
		if ust.Dev == st.Dev && ust.Ino == st.Ino {
			unix.Close(up)
			break // the top of the tree, which is not the root
		}
		fd = up
	}
	i, err := who.firstDenied(way)
	if err != nil {
		return walked{}, err
	}
	if i >= 0 {
		dir, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(way[i]))
		st := stats[i]
		w.blocked = fmt.Sprintf("%s (mode %04o, uid %d's, gid %d%s) is not searchable by uid %d", dir, st.Mode&0o7777, st.Uid, st.Gid, aclNote(way[i]), who.uid)
	}
	return w, nil
}

// aclNote names an access ACL on the directory open at fd, which decides
// beside its mode.
func aclNote(fd int) string {
	if specs.HasACL("/proc/self/fd/" + strconv.Itoa(fd)) {
		return ", with an ACL"
	}
	return ""
}

// othersMayWrite tells whether a user other than root may change the
// entries of the directory open at fd: it is not root's alone by its mode
// (an ACL counts as opening it). A read-only mount is no answer: a bind
// is read-only only through itself, and its host directory changes
// through any other mount of it (a checkout's owner, another container's
// workspace).
func othersMayWrite(fd int, st *unix.Stat_t) bool {
	return !specs.OnlyRootWrites(st) || specs.HasACL("/proc/self/fd/"+strconv.Itoa(fd))
}
