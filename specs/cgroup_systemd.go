package specs

import (
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/opencontainers/cgroups/systemd"
)

// systemdControllers are the names systemd's cg_escape prefixes with "_"
// when they stand before a cgroup directory's last dot, so that no unit's
// directory looks like a controller's file (cpu.slice is _cpu.slice).
var systemdControllers = []string{"cpu", "cpuacct", "cpuset", "io", "blkio", "memory", "devices", "pids",
	"bpf-firewall", "bpf-devices", "bpf-foreign", "bpf-socket-bind", "bpf-restrict-network-interfaces"}

// SystemdScopePath is the cgroupfs path of the scope that the backend's
// systemd driver (--systemd-cgroup) puts a container in for the
// cgroupsPath slice:prefix:name: the slice expanded as systemd nests it
// (kubepods-burstable-pod1.slice is
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice)
// and <prefix>-<name>.scope below it. runc starts that scope over D-Bus and
// takes systemd's "unit exists" for success (runc 1.1), so an existing
// scope is joined, not refused: the path is what the cgroups_path rule
// judges, like a cgroupfs path. A name ending in .slice would make runc
// start that slice instead of a scope, and other unit suffixes name no
// scope of the container's own; both are errors, as is a slice that is
// the root or that systemd would not nest as expanded here.
func SystemdScopePath(cgroupsPath string) (string, error) {
	parts := strings.Split(cgroupsPath, ":")
	if len(parts) != 3 || !systemdUnitName().MatchString(parts[0]) || !systemdUnitName().MatchString(parts[1]) ||
		!systemdUnitName().MatchString(parts[2]) {
		return "", errors.New("a systemd cgroupsPath is slice:prefix:name, each a plain unit name")
	}
	slice, prefix, name := parts[0], parts[1], parts[2]
	for _, suf := range systemdUnitSuffixes {
		if strings.HasSuffix(name, suf) {
			return "", errors.New("the name " + name + " ends in " + suf + ": the backend makes <prefix>-<name>.scope of a plain name, and a .slice name would be a slice unit instead of the container's own scope")
		}
	}
	expanded, err := systemd.ExpandSlice(slice)
	if err != nil {
		return "", errors.New("the slice " + slice + " is not one systemd nests (" + err.Error() + "): dash-separated non-empty parts ending in .slice")
	}
	if expanded == "/" {
		return "", errors.New("the slice " + slice + " is the root slice")
	}
	p := expanded + "/" + prefix + "-" + name + ".scope"
	for _, dir := range strings.Split(p[1:], "/") {
		if systemdEscapes(dir) {
			return "", errors.New(dir + " is a name systemd escapes in the cgroup tree (it would be _" + dir + "), so its cgroup cannot be judged by name")
		}
	}
	return p, nil
}

// systemdEscapes tells whether systemd's cg_escape changes the cgroup
// directory name of a unit: a leading "_" or ".", a "cgroup." prefix, a
// name of cgroup v1's own files, or a controller's name before the last
// dot. The backend computes the path without escaping, so such a unit's
// cgroup is not where bulkhead and the backend look.
func systemdEscapes(dir string) bool {
	if dir == "" || dir[0] == '_' || dir[0] == '.' || strings.HasPrefix(dir, "cgroup.") {
		return true
	}
	switch dir {
	case "notify_on_release", "release_agent", "tasks":
		return true
	}
	if i := strings.LastIndexByte(dir, '.'); i > 0 {
		return slices.Contains(systemdControllers, dir[:i])
	}
	return false
}

// checkSliceParent refuses a cgroup_parents entry that names a slice's
// group anywhere but where systemd nests it: a slice's group is the
// expansion of its name (/kubepods.slice/kubepods-burstable.slice), and an
// entry written as /kubepods-burstable.slice would match no path the rule
// judges, silently refusing the containers it was meant to admit.
func checkSliceParent(d string) error {
	base := path.Base(d)
	if !strings.Contains(d, ".slice") {
		return nil
	}
	if want, err := systemd.ExpandSlice(base); err != nil || want != d {
		if err == nil {
			return errors.New("a slice's group is where systemd nests it: " + want)
		}
		return errors.New("want a slice's group in cgroupfs form, its dash-separated parts nested (/kubepods.slice/kubepods-burstable.slice)")
	}
	return nil
}
