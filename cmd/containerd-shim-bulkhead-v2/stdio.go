package main

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/specs"
)

// judgedStreams are a process's stdio as a client gave it and the FIFOs
// those paths led to when they were judged, held open (O_PATH) until the
// task service has opened them through /proc/self/fd: it opens a stream
// when the process starts, an exec's at its Start, which the client sends
// whenever it likes, and by then the path may lead elsewhere. A client
// judged on a FIFO in its own container's rootfs (an image's, root's)
// deleted and made that container again from an image holding a link to
// a host file in its place, and the exec's job read a root-only file.
type judgedStreams struct {
	paths [3]string // the client's: stdin, stdout, stderr
	fds   [3]int    // the FIFOs judged, -1 for none
	// startFailed marks an exec whose Start failed (Service.Start).
	startFailed bool
}

// judgeStdio judges a task's or an exec's stdio as a client gave it and
// opens what it judged. runc's task service runs a binary:// stream's
// program as root in the host's namespaces, appends to a file:// stream's
// path as root, and opens a plain path as root, following links, whatever
// it is: a client ran any command on the host, and the job read a
// root-only file and appended to another. Each stream must be none or
// the path of a FIFO that only root can change (openStream).
func judgeStdio(stdin, stdout, stderr string) (*judgedStreams, error) {
	j := &judgedStreams{paths: [3]string{stdin, stdout, stderr}, fds: [3]int{-1, -1, -1}}
	for i, name := range []string{"stdin", "stdout", "stderr"} {
		p := j.paths[i]
		if p == "" {
			continue
		}
		if u, err := url.Parse(p); err != nil || u.Scheme != "" {
			j.release()
			return nil, fmt.Errorf("bulkhead: %s %q is refused: a stream URI is run or opened by the shim as root on the host; give the path of a FIFO", name, p)
		}
		fd, err := openStream(p)
		if err != nil {
			j.release()
			return nil, fmt.Errorf("bulkhead: %s %q is refused: %w", name, p, err)
		}
		j.fds[i] = fd
	}
	return j, nil
}

// handed are the paths the task service opens: the judged FIFOs
// themselves.
func (j *judgedStreams) handed() (stdin, stdout, stderr string) {
	var out [3]string
	for i, fd := range j.fds {
		if fd >= 0 {
			out[i] = "/proc/self/fd/" + strconv.Itoa(fd)
		}
	}
	return out[0], out[1], out[2]
}

// release closes the judged FIFOs once the task service has opened them
// (or will not).
func (j *judgedStreams) release() {
	for i, fd := range j.fds {
		if fd >= 0 {
			unix.Close(fd)
			j.fds[i] = -1
		}
	}
}

// streamSuffixes end the name of every stream FIFO containerd's clients
// make: ctr's, CRI's and nerdctl's <id>-stdout, Docker's init-stdout.
var streamSuffixes = []string{"-stdin", "-stdout", "-stderr"}

// maxLinks is the kernel's bound on the links one path resolution follows.
const maxLinks = 40

// openStream walks a stream's path as the kernel resolves it, one
// component at a time, and opens the FIFO at its end (O_PATH) unless a
// directory or link on the way or the FIFO is not root's, or a directory
// lets anyone else rename an entry (group- or world-writable without the
// sticky bit): a job that can write a directory on the way (its own
// mounts through /proc/<pid>/root, its workspace) chooses what the path
// leads to. procfs is not walked: its magic links resolve in another
// process's root, not as readlink says. The FIFO's name must end in
// -stdin, -stdout or -stderr, as the FIFOs clients make for streams do;
// other FIFOs root keeps (a shim's log, /run/initctl) are services'.
func openStream(path string) (int, error) {
	if !strings.HasPrefix(path, "/") {
		return -1, errors.New("not an absolute path; give the path of a FIFO the client made")
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	dir, err := unix.Dup(root)
	if err != nil {
		return -1, err
	}
	defer func() { unix.Close(dir) }()
	if err := rootOnlyDirRefusal(root, "/"); err != nil {
		return -1, err
	}
	rest, links, walked := components(path), 0, "/"
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, fmt.Errorf("%s in %s: %w; give the path of a FIFO the client made", name, walked, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		here := walked + name
		if st.Uid != 0 {
			unix.Close(fd)
			return -1, fmt.Errorf("%s is owned by uid %d, who can swap what the path leads to after this check; give a FIFO on a path only root can change", here, st.Uid)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, err := readlinkFd(fd)
			unix.Close(fd)
			if err != nil {
				return -1, err
			}
			if links++; links > maxLinks {
				return -1, fmt.Errorf("more than %d links on the way; give the path of a FIFO", maxLinks)
			}
			rest = append(components(target), rest...)
			if strings.HasPrefix(target, "/") {
				next, err := unix.Dup(root)
				if err != nil {
					return -1, err
				}
				unix.Close(dir)
				dir, walked = next, "/"
			}
		case unix.S_IFDIR:
			if err := rootOnlyDirRefusal(fd, here); err != nil {
				unix.Close(fd)
				return -1, err
			}
			unix.Close(dir)
			dir, walked = fd, here+"/"
		case unix.S_IFIFO:
			if len(rest) > 0 {
				unix.Close(fd)
				return -1, fmt.Errorf("%s is a FIFO, not a directory", here)
			}
			for _, s := range streamSuffixes {
				if strings.HasSuffix(name, s) {
					return fd, nil
				}
			}
			unix.Close(fd)
			return -1, fmt.Errorf("FIFO %s is not named as a client names a stream (<id>-stdin, -stdout, -stderr), and root's other FIFOs are services' (a shim's log, /run/initctl); give the FIFO the client made", here)
		default:
			unix.Close(fd)
			return -1, fmt.Errorf("%s is not a FIFO, and the shim would open it as root and hand it to the job; give the path of a FIFO", here)
		}
	}
	return -1, errors.New("it ends in a directory, not a FIFO; give the path of a FIFO")
}

// rootOnlyDirRefusal refuses a directory on a stream's path that is not
// root's, that another than root may rename entries of, or that is
// procfs.
func rootOnlyDirRefusal(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if !specs.OnlyRootRenames(&st) {
		return fmt.Errorf("directory %s (uid %d, mode %04o) lets others than root swap what the path leads to after this check; give a FIFO on a path only root can change", path, st.Uid, st.Mode&0o7777)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return err
	}
	if fs.Type == unix.PROC_SUPER_MAGIC {
		return fmt.Errorf("%s is on procfs, whose links lead into other processes' roots; give a FIFO's own path", path)
	}
	return nil
}

// components splits a path into the names the kernel resolves one by
// one; "." names nothing, ".." its directory's parent.
func components(path string) []string {
	var out []string
	for _, c := range strings.Split(path, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// readlinkFd reads the target of a link opened with O_PATH|O_NOFOLLOW.
func readlinkFd(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
