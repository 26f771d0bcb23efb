package runtime

import (
	"fmt"
	"os"
	"strconv"

	"bulkhead.dev/bulkhead/specs"
)

// writeCallerPidFile writes a verified process's pid to the caller's
// --pid-file as runc writes one: a new file beside it, renamed over it,
// so a reader never sees half a pid and a link at that path is replaced,
// not followed. The backend writes its pid into a file of bulkhead's own
// instead. Read back from the caller's path, which anyone who may write
// its directory can change between the backend's write and bulkhead's
// read, the pid chose the process verification looked at, and the
// container's own process could go unverified. Written only once the
// process is verified, a caller's pid file never names one that failed.
func writeCallerPidFile(path string, pid int) error {
	if err := specs.WriteVolatile(path, []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("pid file %s: %w", path, err)
	}
	return nil
}

// removeCallerPidFile removes the caller's pid file a failed create wrote,
// while it still names that create's init: another create given the same
// path may have written its own since.
func removeCallerPidFile(path string, pid int) {
	if got, err := readPidFile(path); err == nil && got == pid {
		os.Remove(path)
	}
}
