package specs

import (
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// NamespaceFile is kind's name under /proc/<pid>/ns.
func NamespaceFile(kind rspec.LinuxNamespaceType) string {
	switch kind {
	case rspec.NetworkNamespace:
		return "net"
	case rspec.MountNamespace:
		return "mnt"
	default:
		return string(kind)
	}
}

// NamespacePathPid is the pid of a namespace path of kind that reads
// /proc/<pid>/ns/<file>, written exactly so; false for any other path. The
// kernel resolves a path as it walks it, so a "..", a "." or a doubled
// slash would be judged as one path and opened by the backend as another
// (/proc/<pid>/root/../ns/mnt is a file in that process's root, which its
// owner wrote).
func NamespacePathPid(path string, kind rspec.LinuxNamespaceType) (int, bool) {
	rest, ok := strings.CutPrefix(path, "/proc/")
	if !ok {
		return 0, false
	}
	pidText, ok := strings.CutSuffix(rest, "/ns/"+NamespaceFile(kind))
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 1 || strconv.Itoa(pid) != pidText {
		return 0, false
	}
	return pid, true
}
