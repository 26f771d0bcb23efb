package specs

import (
	"errors"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/seccomp"
)

// CheckInvariants reports every way in which s falls short of the
// profile's boundary, or nil. It is what Apply must guarantee and what the
// post-create verification re-reads; it uses no host state, so it is
// validation of the spec, not of the kernel. No namespace path may be
// joined; see CheckInvariantsContext for pods.
func CheckInvariants(p *Profile, s *rspec.Spec) error {
	return CheckInvariantsContext(&Context{Profile: p}, s)
}

// CheckInvariantsContext is CheckInvariants with the namespace paths that
// c.JoinableNamespace accepts allowed.
func CheckInvariantsContext(c *Context, s *rspec.Spec) error {
	p := c.Profile
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if s.Process == nil {
		return errors.New("process: absent")
	}
	proc := s.Process
	if caps := proc.Capabilities; caps == nil {
		bad("process.capabilities: absent, runc would keep them all")
	} else if n := len(caps.Bounding) + len(caps.Effective) + len(caps.Inheritable) + len(caps.Permitted) + len(caps.Ambient); n > 0 {
		bad("process.capabilities: %d left", n)
	}
	if !proc.NoNewPrivileges {
		bad("process.noNewPrivileges: false")
	}
	if p.UID != 0 && proc.User.UID == 0 {
		bad("process.user.uid: 0")
	}
	if p.GID != 0 && (proc.User.GID == 0 || hasGid0(proc.User.AdditionalGids)) {
		bad("process.user: gid 0")
	}
	if p.DropSecretEnv {
		for _, kv := range proc.Env {
			name, value, _ := strings.Cut(kv, "=")
			if secretName(name) || secretValue(value) {
				bad("process.env: %s looks like a secret", name)
			}
		}
	}
	if !filepath.IsAbs(proc.Cwd) || madeByRuntime(filepath.Clean(proc.Cwd)) {
		bad("process.cwd: %q", proc.Cwd)
	}
	core := false
	for _, r := range proc.Rlimits {
		if r.Type == "RLIMIT_CORE" {
			core = r.Soft == 0 && r.Hard == 0
		}
	}
	if !core {
		bad("process.rlimits: RLIMIT_CORE not 0")
	}
	if proc.OOMScoreAdj == nil || *proc.OOMScoreAdj < minOOMScoreAdj {
		bad("process.oomScoreAdj: below %d", minOOMScoreAdj)
	}

	if s.Root == nil || (p.ReadonlyRootfs && !s.Root.Readonly) {
		bad("root: not read-only")
	}
	errs = append(errs, checkMounts(p, s.Mounts)...)

	if s.Linux == nil {
		return errors.Join(append(errs, errors.New("linux: absent"))...)
	}
	l := s.Linux
	if l.Seccomp == nil {
		bad("linux.seccomp: absent")
	}
	for _, want := range DefaultMaskedPaths {
		if !hasOpt(l.MaskedPaths, want) {
			bad("linux.maskedPaths: %s missing", want)
		}
	}
	for _, want := range DefaultReadonlyPaths {
		if !hasOpt(l.ReadonlyPaths, want) {
			bad("linux.readonlyPaths: %s missing", want)
		}
	}
	for _, d := range l.Devices {
		if !allowedNode(d) {
			bad("linux.devices: %s %d:%d", d.Path, d.Major, d.Minor)
		}
	}
	errs = append(errs, checkNamespaces(c, l)...)
	for k := range l.Sysctl {
		if ns, ok := sysctlNamespace(strings.ReplaceAll(k, "/", ".")); !ok || !ownNamespace(l, ns) {
			bad("linux.sysctl: %s", k)
		}
	}
	errs = append(errs, checkResources(p, l.Resources)...)
	errs = append(errs, checkDefaultDeny(p, c.ID, s)...)
	if p.Network == NetworkNone && s.Hooks != nil {
		//lint:ignore SA1019 engines still send prestart hooks (Docker's libnetwork-setkey); they must be policed
		for _, hs := range [][]rspec.Hook{s.Hooks.Prestart, s.Hooks.CreateRuntime, s.Hooks.CreateContainer, s.Hooks.StartContainer} {
			for _, h := range hs {
				if mentions(h, "libnetwork-setkey") {
					bad("hooks: libnetwork-setkey")
				}
			}
		}
	}
	return errors.Join(errs...)
}

func hasGid0(gids []uint32) bool {
	for _, g := range gids {
		if g == 0 {
			return true
		}
	}
	return false
}

// lastOpt says which of two opposite mount options wins: runc applies them
// in order.
func lastOpt(opts []string, on, off string) bool {
	v := false
	for _, o := range opts {
		switch o {
		case on:
			v = true
		case off:
			v = false
		}
	}
	return v
}

func checkMounts(p *Profile, mounts []rspec.Mount) []error {
	var errs []error
	tmp := -1
	for i, m := range mounts {
		dst := cleanAbs(m.Destination)
		if dst == "/tmp" {
			tmp = i
		}
		switch {
		case isBind(m):
			// A trusted profile's direct workspace is a read-write bind
			// by the administrator's choice; nosuid and nodev still hold.
			direct := p.Trusted && p.WorkspaceModeOf() == WorkspaceDirect && p.IsWorkspace(m)
			if !direct && !lastOpt(m.Options, "ro", "rw") || !lastOpt(m.Options, "nosuid", "suid") || !lastOpt(m.Options, "nodev", "dev") ||
				hasOpt(m.Options, "rrw") || hasOpt(m.Options, "rsuid") || hasOpt(m.Options, "rdev") {
				errs = append(errs, fmt.Errorf("mounts[%s]: bind of %s not ro,nosuid,nodev", m.Destination, m.Source))
			}
			if filepath.IsAbs(m.Source) {
				if why := lexicalRefusals(filepath.Clean(m.Source)); why != "" {
					errs = append(errs, fmt.Errorf("mounts[%s]: %s", m.Destination, why))
				}
			}
		case !hasOpt(virtualFS, m.Type):
			errs = append(errs, fmt.Errorf("mounts[%s]: type %q", m.Destination, m.Type))
		case m.Type == "sysfs" || m.Type == "cgroup" || m.Type == "cgroup2":
			if !lastOpt(m.Options, "ro", "rw") || hasOpt(m.Options, "rrw") {
				errs = append(errs, fmt.Errorf("mounts[%s]: %s not ro", m.Destination, m.Type))
			}
		}
	}
	if tmp < 0 {
		return append(errs, errors.New("mounts[/tmp]: absent"))
	}
	m := mounts[tmp]
	if m.Type != "tmpfs" || isBind(m) || !lastOpt(m.Options, "noexec", "exec") || hasOpt(m.Options, "rexec") ||
		!lastOpt(m.Options, "nosuid", "suid") || !lastOpt(m.Options, "nodev", "dev") {
		errs = append(errs, fmt.Errorf("mounts[/tmp]: %s %v, want tmpfs noexec,nosuid,nodev", m.Type, m.Options))
	}
	return errs
}

func checkNamespaces(c *Context, l *rspec.Linux) []error {
	var errs []error
	want := append([]rspec.LinuxNamespaceType{}, requiredNamespaces...)
	if c.Profile.Network == NetworkNone {
		want = append(want, rspec.NetworkNamespace)
	}
	for _, t := range want {
		if namespaceIndex(l, t) < 0 {
			errs = append(errs, fmt.Errorf("linux.namespaces: no %s namespace", t))
		}
	}
	for _, ns := range l.Namespaces {
		if ns.Path == "" || c.joinable(ns.Type, ns.Path) {
			continue
		}
		if ns.Type == rspec.NetworkNamespace && c.Profile.Network != NetworkNone {
			continue
		}
		errs = append(errs, fmt.Errorf("linux.namespaces: %s joins %s", ns.Type, ns.Path))
	}
	return errs
}

func checkResources(p *Profile, r *rspec.LinuxResources) []error {
	var errs []error
	if r == nil {
		r = &rspec.LinuxResources{}
	}
	if len(r.Devices) == 0 || r.Devices[0].Allow || !(r.Devices[0].Type == "" || r.Devices[0].Type == "a") ||
		r.Devices[0].Major != nil || r.Devices[0].Minor != nil {
		errs = append(errs, errors.New("linux.resources.devices: does not start with deny-all"))
	}
	for _, d := range r.Devices {
		if d.Allow && !inAllowlist(d) {
			errs = append(errs, fmt.Errorf("linux.resources.devices: %s", cgroupRuleString(d)))
		}
	}
	if p.PidsLimit > 0 && (r.Pids == nil || r.Pids.Limit == nil || *r.Pids.Limit <= 0 || *r.Pids.Limit > p.PidsLimit) {
		errs = append(errs, fmt.Errorf("linux.resources.pids.limit: want 1..%d", p.PidsLimit))
	}
	if ceiling, _ := p.MemoryBytes(); ceiling > 0 {
		m := r.Memory
		switch {
		case m == nil || m.Limit == nil || *m.Limit <= 0 || *m.Limit > ceiling:
			errs = append(errs, fmt.Errorf("linux.resources.memory.limit: want 1..%d", ceiling))
		case m.Swap == nil || *m.Swap != *m.Limit:
			errs = append(errs, errors.New("linux.resources.memory.swap: not equal to the limit"))
		}
	}
	if p.CPUs > 0 {
		c := r.CPU
		if c == nil || c.Quota == nil || c.Period == nil || *c.Quota <= 0 || *c.Period == 0 || *c.Period > maxCPUPeriod ||
			float64(*c.Quota) > p.CPUs*float64(*c.Period) {
			errs = append(errs, fmt.Errorf("linux.resources.cpu: quota/period above %v", p.CPUs))
		}
	}
	return errs
}

// checkDefaultDeny re-reads, with predicates of its own, what the
// default-deny rules promise: no hook outside hooks_allowed, no refused
// field, only kernel filesystems and non-recursive binds, ids in range,
// the native syscall ABIs only, no realtime.
func checkDefaultDeny(p *Profile, id string, s *rspec.Spec) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if h := s.Hooks; h != nil {
		//lint:ignore SA1019 engines still send prestart hooks; they must be policed
		for _, hs := range [][]rspec.Hook{h.Prestart, h.CreateRuntime, h.CreateContainer, h.StartContainer, h.Poststart, h.Poststop} {
			for _, hk := range hs {
				allowed := false
				for _, a := range p.HooksAllowed {
					allowed = allowed || a == hk.Path
				}
				// ruleHooks hands dockerd's hook over with the checked path
				// of dockerd's executable, never a /proc/<pid>/exe, and
				// with the arguments dockerd writes for this container.
				dockerd := p.Network != NetworkNone && isDockerdBinary(hk.Path) && dockerdHookShape(hk, id)
				if !allowed && !dockerd {
					bad("hooks: %s not allowed", hk.Path)
				}
			}
		}
	}
	for _, m := range s.Mounts {
		switch m.Type {
		case "bind", "tmpfs", "proc", "sysfs", "mqueue", "devpts", "cgroup", "cgroup2":
		case "":
			if !slices.Contains(m.Options, "bind") {
				bad("mounts[%s]: no type", m.Destination)
			}
		default:
			bad("mounts[%s]: type %s", m.Destination, m.Type)
		}
		if slices.Contains(m.Options, "rbind") {
			bad("mounts[%s]: recursive bind", m.Destination)
		}
		if m.Type == "tmpfs" && (!slices.Contains(m.Options, "nosuid") || slices.Contains(m.Options, "suid")) {
			bad("mounts[%s]: tmpfs without nosuid", m.Destination)
		}
		if err := CheckWritableNoexec(p, m); err != nil {
			errs = append(errs, err)
		}
		if len(m.UIDMappings)+len(m.GIDMappings) > 0 {
			bad("mounts[%s]: idmapped", m.Destination)
		}
		// runc places a relative destination under the rootfs: "proc" is /proc.
		if m.Type == "proc" && filepath.Clean("/"+m.Destination) != "/proc" {
			bad("mounts[%s]: proc outside /proc", m.Destination)
		}
	}
	if proc := s.Process; proc != nil && p.UID != 0 {
		if !idInRanges(proc.User.UID, p.UID, p.AllowedUIDs) || !idInRanges(proc.User.GID, p.GID, p.AllowedGIDs) {
			bad("process.user: %d:%d outside the profile's ids", proc.User.UID, proc.User.GID)
		}
		for _, g := range proc.User.AdditionalGids {
			if !idInRanges(g, p.GID, p.AllowedGIDs) {
				bad("process.user.additionalGids: %d outside the profile's ids", g)
			}
		}
		if sch := proc.Scheduler; sch != nil && (sch.Policy == rspec.SchedFIFO || sch.Policy == rspec.SchedRR || sch.Policy == rspec.SchedDeadline || sch.Nice < 0) {
			bad("process.scheduler: %s nice %d", sch.Policy, sch.Nice)
		}
		for _, r := range proc.Rlimits {
			if (r.Type == "RLIMIT_RTPRIO" || r.Type == "RLIMIT_RTTIME") && (r.Soft != 0 || r.Hard != 0) {
				bad("process.rlimits: %s not 0", r.Type)
			}
		}
		if proc.ApparmorProfile == "unconfined" {
			bad("process.apparmorProfile: unconfined")
		}
	}
	if l := s.Linux; l != nil {
		if l.IntelRdt != nil || len(l.NetDevices) > 0 || len(l.UIDMappings)+len(l.GIDMappings) > 0 || len(l.TimeOffsets) > 0 {
			bad("linux: a refused field is set")
		}
		for _, ns := range l.Namespaces {
			if ns.Type == rspec.UserNamespace || ns.Type == rspec.TimeNamespace {
				bad("linux.namespaces: %s", ns.Type)
			}
		}
		if r := l.Resources; r != nil {
			if len(r.Unified) > 0 || r.Network != nil && (r.Network.ClassID != nil && *r.Network.ClassID != 0 || len(r.Network.Priorities) > 0) {
				bad("linux.resources: unified or network set")
			}
			if c := r.CPU; c != nil && (c.RealtimeRuntime != nil && *c.RealtimeRuntime != 0 || c.RealtimePeriod != nil && *c.RealtimePeriod != 0) {
				bad("linux.resources.cpu: realtime")
			}
			if c := r.CPU; c != nil && c.Shares != nil && float64(*c.Shares) > 1024*max(1, math.Ceil(p.CPUs)) {
				bad("linux.resources.cpu.shares: %d", *c.Shares)
			}
			if b := r.BlockIO; b != nil {
				// 19 and 100: rule_blkio.go says why.
				over := func(w *uint16, ceiling uint16) bool { return w != nil && *w > ceiling }
				if over(b.Weight, 19) || over(b.LeafWeight, 100) {
					bad("linux.resources.blockIO: weight above the default group's")
				}
				for _, d := range b.WeightDevice {
					if over(d.Weight, 100) || over(d.LeafWeight, 100) {
						bad("linux.resources.blockIO.weightDevice[%d:%d]: weight above the default group's", d.Major, d.Minor)
					}
				}
			}
		}
		if sc := l.Seccomp; sc != nil {
			for _, a := range sc.Architectures {
				if !slices.Contains(seccomp.ABIsKept(p.CompatSyscalls), a) {
					bad("linux.seccomp.architectures: %s", a)
				}
			}
		}
	}
	return errs
}

// dockerdHookShape is the invariant's own reading of dockerd's network
// hook: libnetwork-setkey, one clean absolute -exec-root=, this
// container's id, a 12-digit hex controller id, at most a TRACEPARENT in
// the environment and no timeout. Which exec root is dockerd's needs the
// dockerd process, which only ruleHooks has.
func dockerdHookShape(hk rspec.Hook, id string) bool {
	if len(hk.Args) != 4 || hk.Args[0] != "libnetwork-setkey" || id == "" || hk.Args[2] != id || hk.Timeout != nil || len(hk.Env) > 1 {
		return false
	}
	root, ok := strings.CutPrefix(hk.Args[1], "-exec-root=")
	if !ok || !strings.HasPrefix(root, "/") || path.Clean(root) != root || len(hk.Args[3]) != 12 ||
		strings.Trim(hk.Args[3], "0123456789abcdef") != "" {
		return false
	}
	return len(hk.Env) == 0 || strings.HasPrefix(hk.Env[0], "TRACEPARENT=") && strings.Trim(strings.TrimPrefix(hk.Env[0], "TRACEPARENT="), "0123456789abcdef-") == "" &&
		len(hk.Env[0]) == len("TRACEPARENT=")+55
}

// idInRanges is the invariant's own reading of an id allowlist.
func idInRanges(id, own uint32, ranges []string) bool {
	if id == own {
		return true
	}
	for _, r := range ranges {
		var lo, hi uint32
		if n, _ := fmt.Sscanf(r, "%d-%d", &lo, &hi); n == 2 && lo > 0 && id >= lo && id <= hi {
			return true
		}
		if n, _ := fmt.Sscanf(r, "%d", &lo); n == 1 && !strings.Contains(r, "-") && lo > 0 && id == lo {
			return true
		}
	}
	return false
}

// CheckWritableNoexec holds for a mount the sandbox may write (a tmpfs, or
// a bind that is not read-only: a workspace) when it is noexec, or when the
// profile lets the job run what it writes and the mount is one of the
// places that grant covers: the build scratch and the workspaces. Anywhere
// else an exec mount the sandbox writes would run any program it brings,
// whatever /tmp's noexec says.
func CheckWritableNoexec(p *Profile, m rspec.Mount) error {
	writable := m.Type == "tmpfs" && !isBind(m) || isBind(m) && !lastOpt(m.Options, "ro", "rw")
	if !writable || lastOpt(m.Options, "noexec", "exec") && !hasOpt(m.Options, "rexec") {
		return nil
	}
	if p.ExecutesWrites() && (m.Type == "tmpfs" && !isBind(m) && cleanAbs(m.Destination) == ScratchDir ||
		isBind(m) && p.IsWorkspace(m)) {
		return nil
	}
	return fmt.Errorf("mounts[%s]: writable and not noexec: only a job profile's build scratch and workspaces may execute what the job writes", m.Destination)
}
