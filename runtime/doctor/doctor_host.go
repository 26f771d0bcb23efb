package doctor

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/seccomp"
	"bulkhead.dev/bulkhead/specs"
)

// Host checks the kernel features and cgroup controllers the
// default profile's controls rely on.
func Host(p specs.Profile, cgOpts []cgroups.Option) []Check {
	var out []Check
	out = append(out, doctorSeccomp(p))
	out = append(out, doctorCgroups(cgOpts)...)
	out = append(out, doctorOverlay(), doctorIDMap(), doctorPidfd(), doctorUserns(), doctorSysResource(), doctorPtraceScope())
	return out
}

// doctorSeccomp: the kernel's filter mode and the actions the profile
// uses, and that the profile names this machine's native architecture
// (a filter without it would kill or pass every call by the bad-arch
// action instead of judging it).
func doctorSeccomp(p specs.Profile) Check {
	const actions = "/proc/sys/kernel/seccomp/actions_avail"
	c := Check{Name: "seccomp", Looked: actions + ", the default profile's architectures"}
	data, err := os.ReadFile(actions)
	if err != nil {
		c.Status, c.Found = StatusFail, "no seccomp filter mode: "+err.Error()
		c.Fix = "boot a kernel built with CONFIG_SECCOMP_FILTER; without it no container gets its filter and create refuses"
		return c
	}
	have := strings.Fields(string(data))
	var lacks []string
	for _, a := range []string{"errno", "kill_process", "kill_thread", "allow"} {
		if !slices.Contains(have, a) {
			lacks = append(lacks, a)
		}
	}
	if len(lacks) > 0 {
		c.Status, c.Found = StatusFail, "kernel lacks seccomp actions "+strings.Join(lacks, ", ")
		c.Fix = "upgrade the kernel (4.14 or later)"
		return c
	}
	prof, err := seccomp.ForProfile(p.Seccomp, p.CompatSyscalls, p.ExecutesWrites())
	if err != nil {
		c.Status, c.Found = StatusFail, err.Error()
		c.Fix = "fix the profile's seccomp file; create refuses every container until then"
		return c
	}
	native, listed, err := seccomp.NativeArch(prof)
	if err != nil {
		c.Status, c.Found = StatusFail, err.Error()
		c.Fix = "install a libseccomp that knows this architecture"
		return c
	}
	var arches []string
	for _, a := range prof.Architectures {
		arches = append(arches, string(a))
	}
	if !listed {
		c.Status, c.Found = StatusFail, fmt.Sprintf("profile %s names %s, not this machine's %s", p.Name, strings.Join(arches, " "), native)
		c.Fix = "add " + string(native) + " to the seccomp profile's architectures"
		return c
	}
	c.Status, c.Found = StatusOK, fmt.Sprintf("filter mode with %s; profile %s names %s (native %s)", strings.Join(have, " "), p.Name, strings.Join(arches, " "), native)
	return c
}

// doctorCgroups: the cgroup version, each controller bulkhead applies and
// verifies limits with, and swap accounting (without it memory+swap
// cannot be capped, so a job can outgrow its memory limit into swap).
func doctorCgroups(opts []cgroups.Option) []Check {
	h, err := cgroups.Inspect(opts...)
	if err != nil {
		return []Check{{Name: "cgroups", Status: StatusFail, Looked: "/sys/fs/cgroup", Found: err.Error(),
			Fix: "mount cgroup2 at /sys/fs/cgroup (or the v1 hierarchies); no limit can be applied without it"}}
	}
	out := []Check{{Name: "cgroups", Status: StatusOK, Looked: h.Root, Found: fmt.Sprintf("cgroup v%d", h.Version)}}
	if len(opts) == 0 {
		out[0].Found += ", mode " + cgroups.ModeName()
	}
	for _, ctl := range h.Controllers {
		c := Check{Name: "cgroup " + ctl.Name, Looked: h.Root, Found: ctl.Detail}
		if ctl.Usable {
			c.Status = StatusOK
		} else {
			c.Status = StatusFail
			if h.Version == 1 {
				c.Fix = fmt.Sprintf("mount the %s controller (mount -t cgroup -o %s cgroup %s/%s), or boot with cgroup v2 and enable it; without it the %s limit is neither applied nor verifiable and create refuses",
					ctl.Name, ctl.Name, h.Root, ctl.Name, ctl.Name)
			} else {
				c.Fix = fmt.Sprintf("echo +%s > %s/cgroup.subtree_control (and in every ancestor of the groups bulkhead uses); without it the %s limit is neither applied nor verifiable and create refuses",
					ctl.Name, h.Root, ctl.Name)
			}
		}
		out = append(out, c)
	}
	swap := Check{Name: "cgroup memory swap", Looked: h.SwapDetail}
	if h.SwapAccounting {
		swap.Status, swap.Found = StatusOK, "swap accounting on: memory+swap is capped at the memory limit"
	} else {
		swap.Status, swap.Found = StatusFail, "no swap accounting: memory+swap cannot be capped or read"
		swap.Fix = "boot with swapaccount=1 (cgroup v1) or enable memory in cgroup.subtree_control (v2)"
	}
	return append(out, swap, doctorSocketMemory(h.Version, h.Root))
}

// doctorSocketMemory: cgroup v1 charges the buffers of TCP and UDP sockets
// to no memory cgroup (only the deprecated kmem.tcp limit would, for TCP
// alone), so on runc a job holds up to the host-wide tcp_mem and udp_mem
// beyond its memory limit: measured, 675 MiB of TCP buffers from a
// 256 MiB job. Netlink, whose queues nothing caps, the filter refuses.
func doctorSocketMemory(version int, root string) Check {
	c := Check{Name: "cgroup memory sockets", Looked: root}
	if version == 1 {
		c.Status = StatusWarn
		c.Found = "cgroup v1 charges TCP and UDP socket buffers to no container: a runc job can hold up to the host's net.ipv4.tcp_mem and udp_mem beyond its memory limit"
		c.Fix = "boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1), whose memory controller charges socket buffers to the container, or run untrusted jobs on runsc (profile gvisor), whose network stack is charged to the sandbox"
		return c
	}
	c.Status, c.Found = StatusOK, "cgroup v2 charges socket buffers to the container's memory (memory.stat: sock)"
	return c
}

// doctorOverlay: workspaces are an overlay over the read-only source.
func doctorOverlay() Check {
	c := Check{Name: "overlayfs", Looked: "/proc/filesystems"}
	data, err := os.ReadFile("/proc/filesystems")
	switch {
	case err != nil:
		c.Status, c.Found = StatusFail, err.Error()
	case slices.ContainsFunc(strings.Split(string(data), "\n"), func(l string) bool { return strings.HasSuffix(strings.TrimSpace(l), "overlay") }):
		c.Status, c.Found = StatusOK, "overlay is registered"
		return c
	default:
		c.Status, c.Found = StatusWarn, "overlay is not registered (it may be a module not yet loaded)"
	}
	c.Fix = "modprobe overlay; overlay workspaces (workspace_mode = \"overlay\") refuse to start without it"
	return c
}

// doctorIDMap: a workspace whose source belongs to another user needs an
// idmapped mount; mount_setattr is the call that makes it. It is asked
// with a bad descriptor: EBADF means the call exists, ENOSYS it does not.
func doctorIDMap() Check {
	c := Check{Name: "idmapped mounts", Looked: "mount_setattr(2) with MOUNT_ATTR_IDMAP"}
	err := unix.MountSetattr(-1, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP})
	switch err {
	case unix.ENOSYS:
		c.Status, c.Found = StatusWarn, "the kernel has no mount_setattr (before 5.12)"
		c.Fix = "upgrade the kernel to 5.19 or later (id-mapped mounts, overlayfs over id-mapped layers): a workspace whose source the sandbox user does not own is refused without; others work"
	case unix.EBADF, unix.EINVAL:
		c.Status, c.Found = StatusOK, fmt.Sprintf("mount_setattr exists (probe answered %v)", err)
	default:
		c.Status, c.Found = StatusWarn, fmt.Sprintf("unexpected answer %v", err)
	}
	return c
}

// doctorPidfd: the watchdog holds the container's init by pidfd, so a
// recycled pid is never killed.
func doctorPidfd() Check {
	c := Check{Name: "pidfd", Looked: "pidfd_open(2) on doctor's own pid"}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		c.Status, c.Found = StatusFail, err.Error()
		c.Fix = "upgrade the kernel to 5.3 or later: max_lifetime's watchdog needs pidfd"
		return c
	}
	unix.Close(fd)
	c.Status, c.Found = StatusOK, "available"
	return c
}

// doctorUserns: user namespaces, for rootless runs and idmapped mounts.
func doctorUserns() Check {
	const path = "/proc/sys/user/max_user_namespaces"
	c := Check{Name: "user namespaces", Looked: path}
	data, err := os.ReadFile(path)
	n, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	switch {
	case err != nil:
		c.Status, c.Found = StatusWarn, err.Error()
	case perr != nil || n == 0:
		c.Status, c.Found = StatusWarn, fmt.Sprintf("disabled (%s)", strings.TrimSpace(string(data)))
	default:
		c.Status, c.Found = StatusOK, fmt.Sprintf("up to %d", n)
		return c
	}
	c.Fix = "sysctl user.max_user_namespaces=15000 for rootless engines and idmapped workspaces"
	return c
}

// doctorSysResource: without CAP_SYS_RESOURCE in root's bounding set no
// process may lower an oom_score_adj (CRI's pause container asks for
// -998), and runc's write of a container's 500 does not make it the
// floor the kernel keeps (oom_score_adj_min), so a job may lower its own
// to 0 and die no sooner than host processes when memory runs out.
func doctorSysResource() Check {
	c := Check{Name: "CAP_SYS_RESOURCE", Looked: "/proc/self/status CapBnd"}
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		c.Status, c.Found = StatusWarn, err.Error()
		return c
	}
	for _, line := range strings.Split(string(data), "\n") {
		v, ok := strings.CutPrefix(line, "CapBnd:")
		if !ok {
			continue
		}
		bnd, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			break
		}
		if bnd&(1<<unix.CAP_SYS_RESOURCE) != 0 {
			c.Status, c.Found = StatusOK, "in the bounding set"
			return c
		}
		c.Status, c.Found = StatusWarn, fmt.Sprintf("not in the bounding set (%s): oom_score_adj below 0 fails, and a job may lower its own oom_score_adj from 500 to 0 (runc's write sets no floor without it)", strings.TrimSpace(v))
		c.Fix = "for CRI set restrict_oom_score_adj = true in containerd's CRI plugin config (the pause container asks for -998)"
		return c
	}
	c.Status, c.Found = StatusWarn, "no CapBnd line"
	return c
}

// ptraceScope is Yama's setting: who may trace, and so open another
// process's /proc/<pid>/mem, beyond the uid and dumpable checks.
const ptraceScope = "/proc/sys/kernel/yama/ptrace_scope"

// doctorPtraceScope: a process exec'd into a runc container runs as the
// job's uid and is dumpable once it has executed its program, so without
// Yama's scope 2 the job reads and writes its memory through
// /proc/<pid>/mem (the seccomp filter refuses ptrace and process_vm_*,
// not an open): its stdin, its output, its exit status. Scope 1 is not
// enough: a detached exec's process is the container's init's child once
// the runtime lets go of it. gVisor's Sentry keeps them apart itself.
func doctorPtraceScope() Check { return ptraceScopeAt(ptraceScope) }

func ptraceScopeAt(path string) Check {
	c := Check{Name: "ptrace scope", Looked: path}
	data, err := os.ReadFile(path)
	n, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	switch {
	case errors.Is(err, os.ErrNotExist):
		c.Status, c.Found = StatusWarn, "no Yama in this kernel: a runc job can read and write the memory of every process exec'd into its container (same uid, /proc/<pid>/mem)"
	case err != nil || perr != nil:
		c.Status, c.Found = StatusWarn, fmt.Sprintf("unreadable (%v %v)", err, perr)
	case n < 2:
		c.Status, c.Found = StatusWarn, fmt.Sprintf("%d: a runc job can read and write the memory of every process exec'd into its container (same uid, /proc/<pid>/mem)", n)
	default:
		c.Status, c.Found = StatusOK, fmt.Sprintf("%d: only CAP_SYS_PTRACE may open another process's memory", n)
		return c
	}
	c.Fix = "sysctl kernel.yama.ptrace_scope=2 on a host that runs untrusted jobs on runc (a kernel with Yama), or run them on runsc; never pipe a secret into an exec of a runc job's container"
	return c
}
