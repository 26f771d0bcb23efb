package verify

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
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
func verifyCwd(r *Report, pid int) error {
	proc := "/proc/" + strconv.Itoa(pid)
	var root unix.Stat_t
	if err := unix.Stat(proc+"/root", &root); err != nil {
		return fmt.Errorf("verify: root of %d: %w", pid, err)
	}
	fd, err := unix.Open(proc+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("verify: cwd of %d: %w", pid, err)
	}
	defer func() { unix.Close(fd) }()
	observed := "outside the container's root"
	if target, err := os.Readlink(proc + "/cwd"); err == nil {
		observed += " (" + strconv.Quote(target) + " as the host sees it)"
	}
	for depth := 0; depth < maxCwdDepth; depth++ {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("verify: cwd of %d: %w", pid, err)
		}
		if st.Dev == root.Dev && st.Ino == root.Ino {
			observed = "inside the container's root"
			break
		}
		up, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("verify: cwd of %d: ..: %w", pid, err)
		}
		var ust unix.Stat_t
		if err := unix.Fstat(up, &ust); err != nil {
			unix.Close(up)
			return fmt.Errorf("verify: cwd of %d: %w", pid, err)
		}
		unix.Close(fd)
		fd = up
		if ust.Dev == st.Dev && ust.Ino == st.Ino {
			break // the top of the tree the cwd is in, which is not the root
		}
	}
	r.add("cwd", "inside the container's root", observed)
	return nil
}
