package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/seccompexec"
	"bulkhead.dev/bulkhead/seccomp"
	"bulkhead.dev/bulkhead/specs"
)

// runsc applies linux.seccomp to the container's init only: a process
// of `runsc exec` runs with no filter (fixed in google/gvisor#12692, after
// every runsc this host has). So in enforce mode a runsc container gets
// bulkhead-seccomp-exec bound read-only at seccompexec.Path, and exec
// starts every process through it (execUnderFilter): it installs the
// container's filter inside the sandbox, where gVisor's kernel enforces
// it, and only then executes the workload.

// seccompExecSource is bulkhead-seccomp-exec on the host: next to the
// running bulkhead, as `make install` puts it. A variable so that the
// runtime's own tests, whose binary has no such neighbour, name one.
var seccompExecSource = func() (string, error) { return besideBulkhead(seccompexec.Binary) }

// besideBulkhead is the path of bulkhead's own program name, installed
// next to the running bulkhead.
func besideBulkhead(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locating %s: %w", name, err)
	}
	return filepath.Join(filepath.Dir(self), name), nil
}

// addSeccompExec gives the handed spec the program's bind, with its
// decision, and compiles the filter the program installs: the handed
// one as libseccomp generates it for runc, the very filter the init gets.
func (p *Plan) addSeccompExec(at func(string) string) error {
	src, err := seccompExecSource()
	if err != nil {
		return err
	}
	if p.Handed.Root == nil {
		return fmt.Errorf("mounts[%s]: no root filesystem to bind it into", seccompexec.Path)
	}
	if p.Handed.Linux == nil || p.Handed.Linux.Seccomp == nil {
		return fmt.Errorf("mounts[%s]: no seccomp filter for an exec'd process to install", seccompexec.Path)
	}
	if p.ExecFilter, err = seccomp.Program(p.Handed.Linux.Seccomp); err != nil {
		return fmt.Errorf("mounts[%s]: the filter an exec'd process installs: %w", seccompexec.Path, err)
	}
	d, err := planSeccompExec(p.Handed, at(p.Handed.Root.Path), src)
	if err != nil {
		return err
	}
	p.decide(d)
	return nil
}

// planSeccompExec adds the read-only bind of src at seccompexec.Path to
// the spec handed to runsc, whose root filesystem is at rootfs on the
// host. It refuses a root filesystem where specs.OwnDir is anything but
// root's directory (ownPlaceRefusal); the mounts rule refused every
// mount of the caller's that lands there, by name or through a link.
func planSeccompExec(s *rspec.Spec, rootfs, src string) (specs.Decision, error) {
	field := "mounts[" + seccompexec.Path + "]"
	if why := ownPlaceRefusal(rootfs, seccompexec.Path); why != "" {
		return specs.Decision{}, fmt.Errorf("%s: %s", field, why)
	}
	if why := ownBinaryRefusal(src); why != "" {
		return specs.Decision{}, fmt.Errorf("%s: %s", field, why)
	}
	s.Mounts = append(s.Mounts, rspec.Mount{Destination: seccompexec.Path, Type: "bind", Source: src,
		Options: []string{"bind", "ro", "nosuid", "nodev"}})
	return specs.Decision{Rule: "seccomp", Field: field, Action: specs.Added, After: src + " ro,nosuid,nodev", Layer: specs.LayerSeccomp,
		Why: "runsc applies linux.seccomp to the init only: every exec'd process starts through this static program, which installs the same filter inside the sandbox before the workload runs"}, nil
}

// ownPlaceRefusal says why the root filesystem at rootfs cannot take a
// bind of bulkhead's own program at path, in specs.OwnDir, or "". runsc
// follows a symlink at the mount point when it mounts, and every exec
// starts the path through the same link: an image whose seccomp-exec
// linked into /tmp let the workload swap the directory there and run its
// execs unfiltered. So nothing on the way may be a link, and no directory
// on it may be one the sandbox user could change (a writable root
// filesystem would let it rename them).
func ownPlaceRefusal(rootfs, path string) string {
	steps := []string{rootfs, filepath.Join(rootfs, specs.OwnDir), filepath.Join(rootfs, path)}
	for i, step := range steps {
		var st unix.Stat_t
		err := unix.Lstat(step, &st)
		if i > 0 && errors.Is(err, unix.ENOENT) {
			return "" // runsc makes the rest, as root
		}
		if err != nil {
			return fmt.Sprintf("the root filesystem's %s: %v", step, err)
		}
		name := "/" + strings.TrimPrefix(strings.TrimPrefix(step, rootfs), "/")
		kind := st.Mode & unix.S_IFMT
		switch {
		case i < 2 && kind != unix.S_IFDIR:
			return fmt.Sprintf("the root filesystem's %s is not a directory", name)
		case i == 2 && kind != unix.S_IFREG:
			return fmt.Sprintf("the root filesystem's %s is not a regular file (a symlink there would carry the program's mount elsewhere)", name)
		case i < 2 && !specs.OnlyRootWrites(&st):
			return fmt.Sprintf("the root filesystem's %s can be changed by uid %d or by others (mode %o); it must be root's alone", name, st.Uid, st.Mode&0o7777)
		}
	}
	return ""
}

// ownBinaryRefusal says why the file at path, a program of bulkhead's
// own that containers get (bulkhead-seccomp-exec, the egress forwarder),
// must not be bound into them, or "": it must be a regular executable
// file that only root can change, in a place only root can change
// (specs.RootPlace), since each container binds it anew.
func ownBinaryRefusal(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Sprintf("%s: %v; install it next to bulkhead (make install does)", path, err)
	}
	if why := ownFileRefusal(path, &st); why != "" {
		return why
	}
	_, why, err := specs.RootPlace(path)
	if err != nil {
		return err.Error()
	}
	if why != "" {
		return fmt.Sprintf("%s can be changed by others than root, who could put another program in place of %s; install bulkhead where only root may change it", why, path)
	}
	return ""
}

// ownFileRefusal judges a file of bulkhead's own that a container gets,
// by what it is.
func ownFileRefusal(path string, st *unix.Stat_t) string {
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return path + " is not a regular file"
	case st.Uid != 0:
		return fmt.Sprintf("%s is owned by uid %d, not root", path, st.Uid)
	case st.Mode&0o022 != 0:
		return fmt.Sprintf("%s is writable by group or others (mode %o)", path, st.Mode&0o7777)
	case st.Mode&0o005 != 0o005:
		return fmt.Sprintf("%s cannot be read and executed by the container's user (mode %o)", path, st.Mode&0o7777)
	}
	return ""
}
