package specs

// Control is one row of bulkhead's table of controls: the question it
// answers, the rules that enforce it, the default profile's value, the
// kernel layer that denies an attempt, what bulkhead verifies from the host
// after create, and what the boundary probe attempts from inside. The
// README's table, `bulkhead controls` and the tests all draw from this one
// table, so the rules, the verification and the probe cannot drift apart.
type Control struct {
	Name string `json:"name"`
	// Rules are the specs.Rules that enforce it; none for a control the
	// runtime holds itself (the lifetime watchdog).
	Rules   []string `json:"rules,omitempty"`
	Default string   `json:"default"`
	Layer   string   `json:"layer"`
	// Verified names the checks of runtime/verify.Container (runc) for this control;
	// empty where the host cannot see it and only the probe can.
	Verified []string `json:"verified,omitempty"`
	// Probe names the bulkhead-probe controls that attempt it.
	Probe []string `json:"probe,omitempty"`
}

// Controls is the table, in the order of the README's default boundary.
var Controls = []Control{
	{"capabilities", []string{"capabilities"}, "all five sets empty, for exec too",
		"capability checks (EPERM)", []string{"capabilities"}, []string{"capabilities"}},
	{"privilege escalation", []string{"no_new_privileges"}, "noNewPrivileges true",
		"no_new_privs (setuid ignored)", []string{"no_new_privs"}, []string{"no_new_privs"}},
	{"identity", []string{"user"}, "uid/gid outside allowed_uids/allowed_gids (root included) become 65534:65534; other supplementary groups dropped",
		"DAC (EACCES)", []string{"uid", "gid", "groups"}, []string{"uid"}},
	{"root filesystem", []string{"root", "readonly_rootfs"}, "read-only; root.path inside the bundle or the engine's layer for this container",
		"read-only mount (EROFS)", []string{"read-only root"}, []string{"etc"}},
	{"scratch", []string{"tmp"}, "/tmp tmpfs rw,noexec,nosuid,nodev,size=16m, owned by the sandbox user",
		"tmpfs size (ENOSPC), noexec (EACCES)", []string{"mount flags"}, []string{"tmp-write", "tmp-noexec", "tmp-size"}},
	{"home", []string{"home"}, "none (home_size 0); job profiles: /home/sandbox tmpfs noexec,nosuid,nodev of home_size owned by the process's user, with HOME and the toolchains' cache variables pointing into it where the caller set none (a caller's value in the read-only root too), for exec'd processes as well",
		"tmpfs size (ENOSPC), noexec (EACCES), read-only root elsewhere (EROFS)", nil, nil},
	{"build scratch", []string{"scratch"}, "none (scratch_size 0): no file the job writes is executed or mapped executable (on runc), no memfd; an interpreter still runs code it builds in its own memory, as JITs do; job profiles: /scratch tmpfs nosuid,nodev of scratch_size whose files may be executed (as may the workspace's and a memfd's), TMPDIR and GOTMPDIR there where the caller set none, for exec'd processes as well",
		"tmpfs size (ENOSPC); /tmp and home stay noexec (EACCES); without it memfd_create and memfd_secret are ENOSYS (seccomp; runsc 20221219, which knows no memfd_secret, answers it EPERM)", nil, nil},
	{"mounts", []string{"mounts", "mount_order"}, "types bind, tmpfs, proc, sysfs, mqueue, devpts, cgroup, each at its place; options from an allowlist; every tmpfs noexec,nosuid,nodev with a size, together ≤ tmpfs_total 256m; /dev a fresh tmpfs",
		"mount flags, tmpfs size (ENOSPC)", []string{"mount flags"}, nil},
	{"host mounts", []string{"host_mounts"}, "bind sources only below bind_roots or the engine's files for this container, on plain storage (no proc, sysfs, overlay or FUSE), never a socket or FIFO or a tree holding one; engine state (at its default place or wherever its layout is), homes (/home/<name>, /root, and any user's home in /etc/passwd, or a tree holding one), a home's dot-entries and what its owner keeps from others, credential dirs and a tree holding one at its top or its subdirectories' (a directory of homes) refused; binds ro,nosuid,nodev, not recursive",
		"mount flags (EROFS)", []string{"mount flags"}, nil},
	{"workspaces", []string{"workspace"}, "a bind at /workspace is a copy-on-write overlay of 128m, noexec unless the profile has a build scratch; the source owner's files are the sandbox user's (id-mapped lower layer) when workspace_owners names the owner, the source is open to others, holds no credentials (.ssh, .aws, …) at its top and lies in no hidden directory of a home (~/.local)",
		"overlay upper on a capped tmpfs (ENOSPC), noexec (EACCES); host folder unchanged", []string{"mount flags"}, []string{"workspace"}},
	{"/proc and /sys", []string{"masked_paths"}, "Docker's masked and read-only paths; sysfs and cgroup read-only",
		"masked mounts", []string{"masked paths", "read-only paths", "mount flags"}, []string{"masked-proc", "proc-sys"}},
	{"devices", []string{"devices"}, "null, zero, full, random, urandom, tty, ptmx, pts; device cgroup deny-all (runc 1.1 appends mknod of any node, moot without CAP_MKNOD, and tun 10:200, which a node the image holds opens but without CAP_NET_ADMIN attaches to no interface)",
		"device cgroup, capabilities (EPERM)", nil, []string{"devices"}},
	{"network", []string{"network"}, "new network namespace, no path, loopback only",
		"netns (ENETUNREACH)", []string{"network namespace", "net namespace", "network interfaces"}, []string{"network"}},
	{"egress", []string{"egress"}, "none (egress empty); a profile's egress list: an HTTP proxy outside the sandbox, on 127.0.0.1:3128 in its network namespace (on runsc through a forwarder in the sandbox, over a stream bulkhead hands it), to the listed names and ports only, never to loopback, link-local, private or the host's own addresses unless listed as an address; HTTP_PROXY and the package managers' variables point there",
		"netns (ENETUNREACH; EHOSTUNREACH on runsc), egress broker (403)", nil, []string{"egress"}},
	{"namespaces", []string{"namespaces"}, "pid, ipc, uts, mount, cgroup new; no user or time namespace; a pid, ipc, uts or network namespace path only as /proc/<pid>/ns/<kind>, written exactly so, of this pod's own running sandbox (or runsc's sandbox by CRI annotation); never another's mount or cgroup namespace",
		"namespaces", []string{"pid namespace", "ipc namespace", "uts namespace", "mnt namespace", "cgroup namespace"}, nil},
	{"cgroup", []string{"cgroups_path"}, "a new cgroup: never one that exists already, one below a group holding processes itself, or one below another container's or pod's group (only cgroup_parents, empty groups and its own pod's group may hold others' containers), never a systemd unit's, never one of cgroup_parents or one holding them, at most 16 groups deep; exec only into it or a group below it; the container's process in that very group",
		"cgroups", []string{"cgroup"}, nil},
	{"seccomp", []string{"seccomp"}, "default-deny profile, narrowed by the caller's own filter, never widened; 64-bit ABIs only; memfd_create only with a build scratch; no huge pages",
		"seccomp (EPERM, ENOSYS)", []string{"seccomp"}, []string{"seccomp"}},
	{"processes", []string{"pids"}, "pids.max ≤ 64",
		"pids cgroup (EAGAIN)", []string{"pids"}, []string{"pids"}},
	{"memory", []string{"memory", "hugetlb", "ipc_limits"}, "≤ 256 MiB, swap = limit; hugetlb limits only of the host's page sizes; System V IPC of an IPC namespace of its own within it: a shared memory segment goes with its last process, segments ≤ the limit, message queues ≤ 1 MiB (runsc keeps System V IPC in its own kernel, charged to the sandbox)",
		"memory cgroup (OOM kill)", []string{"memory", "memory+swap", "System V IPC"}, []string{"memory"}},
	{"cpu", []string{"cpu"}, "quota ≤ 1 CPU (100000/100000)",
		"cpu cgroup (throttling)", []string{"cpu"}, []string{"cpu"}},
	{"block I/O", []string{"blkio"}, "weight ≤ 19 (io.weight ≤ 91 after runc's conversion), leaf and per-device weights ≤ 100: never above a default group's share",
		"blkio/io cgroup (proportional share of a busy disk)", nil, nil},
	{"lifetime", nil, "max_lifetime 0: none (set one per job profile)",
		"watchdog outside the sandbox, backend kill --all", nil, nil},
	{"environment", []string{"environment"}, "variables whose name or value looks like a credential (known names, key and token formats, connection strings, webhooks, headers) removed, names recorded: a net for a caller's mistakes, not a boundary, since a secret in another form arrives; pass secrets as files",
		"none: they never arrive", nil, []string{"environment"}},
	{"cwd", []string{"cwd"}, "never resolves under /proc, /dev or /sys, through the image's links or a bind's, nor (runc) through the job's at an exec; the process's cwd inside its root and every directory down to it searchable by its user, for exec too",
		"none: refused before start", []string{"cwd", "cwd reached"}, nil},
	{"spec fields", []string{"unknown_fields", "spec_fields"}, "every field classified (bulkhead controls --fields); unknown or refused fields refused",
		"none: refused before start", nil, nil},
	{"hooks and annotations", []string{"hooks", "annotations"}, "hooks only from hooks_allowed (Docker's libnetwork-setkey removed); annotations only from an allowlist",
		"none: refused before start", nil, nil},
	{"sysctl, rlimits, scheduling, oom_score_adj", []string{"sysctl", "rlimits", "scheduling", "oom_score_adj"}, "sysctls, hostname and domainname only in namespaces of the container's own (not a pod sandbox's it joins); rlimits from an allowlist with ceilings (RLIMIT_CORE 0, no RT, no message queues), soft ≤ hard, each type once; no realtime policy or I/O class, nice ≥ 0; oom_score_adj ≥ 500",
		"namespaces, rlimits, OOM killer", nil, nil},
	{"security labels", []string{"security_labels"}, "AppArmor profiles from apparmor_profiles, container SELinux types at a level of one sensitivity and one or two categories (s0:c123,c456), never a range; never unconfined",
		"AppArmor, SELinux", nil, nil},
}
