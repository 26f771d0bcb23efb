package runtime

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/sys/capability"
	"github.com/moby/sys/mountinfo"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
)

// GVisorInsideControls says which controls the host cannot see for a runsc
// container and who answers for them instead. The pid runsc writes is the
// sandbox (the Sentry), not the workload: the workload's capabilities,
// no_new_privs, uid/gid, seccomp filter and read-only root exist only inside
// gVisor's kernel, which enforces them, so the host's /proc shows the
// Sentry's own values. Those controls are checked by the boundary probe
// (cmd/bulkhead-probe) from inside the sandbox. Verify checks for runsc only
// what the host can see: the sandbox's cgroup limits, that the sandbox is in
// a network namespace other than the host's, and that runsc was started with
// --network=none and --oci-seccomp (without the latter it ignores
// linux.seccomp).
const GVisorInsideControls = "runsc: capabilities, no_new_privs, uid/gid, seccomp and the read-only root " +
	"are enforced inside gVisor's Sentry and checked by the boundary probe from inside; " +
	"the host verifies cgroup limits, a non-host network namespace and the --network=none --oci-seccomp flags"

// Check is one control compared between the spec and what the kernel
// applied.
type Check struct {
	Control  string
	Expected string
	Observed string
	OK       bool
}

// Report is the outcome of Verify, one Check per control.
type Report []Check

// Failed returns the checks whose observed value differs from the expected.
func (r Report) Failed() []Check {
	var out []Check
	for _, c := range r {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Err is nil when every check passed, otherwise an error naming the first
// failed control with its expected and observed values.
func (r Report) Err() error {
	f := r.Failed()
	if len(f) == 0 {
		return nil
	}
	msg := fmt.Sprintf("verify: control %s: expected %s, kernel applied %s", f[0].Control, f[0].Expected, f[0].Observed)
	if len(f) > 1 {
		msg += fmt.Sprintf(" (and %d more failed checks)", len(f)-1)
	}
	return errors.New(msg)
}

func (r *Report) add(control, expected, observed string) {
	*r = append(*r, Check{Control: control, Expected: expected, Observed: observed, OK: expected == observed})
}

// Verify reads from the host what the kernel applied to the container whose
// process is pid and compares it with s, the spec bulkhead handed to the
// backend. For runc and crun pid is the container's init; for runsc it is
// the sandbox process (see GVisorInsideControls). An error means the check
// itself could not be done; the caller fails closed on an error as on a
// failed check (Report.Err).
func Verify(pid int, s *rspec.Spec, backend string) (Report, error) {
	var r Report
	if s == nil {
		return r, errors.New("verify: no spec")
	}
	switch backend {
	case "runc", "crun":
		if err := verifyProcess(&r, pid, s); err != nil {
			return r, err
		}
		if err := verifyNetns(&r, pid, s, true); err != nil {
			return r, err
		}
		if err := verifyRootfs(&r, pid, s); err != nil {
			return r, err
		}
	case "runsc":
		if err := verifyNetns(&r, pid, s, false); err != nil {
			return r, err
		}
		if err := verifyRunscFlags(&r, pid); err != nil {
			return r, err
		}
	default:
		return r, fmt.Errorf("verify: unknown backend %q", backend)
	}
	if err := verifyCgroups(&r, pid, s); err != nil {
		return r, err
	}
	return r, nil
}

// procStatus holds the /proc/PID/status fields Verify reads.
type procStatus map[string]string

// readProcStatus parses /proc/PID/status ("Name:\tvalue" lines).
func readProcStatus(pid int) (procStatus, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	return parseProcStatus(f)
}

func parseProcStatus(rd io.Reader) (procStatus, error) {
	st := procStatus{}
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		st[k] = strings.Join(strings.Fields(v), " ")
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("verify: /proc status: %w", err)
	}
	return st, nil
}

// capMask converts capability names ("CAP_CHOWN") to the bit mask the
// kernel shows in /proc/PID/status. A name that the kernel does not support
// is left out, as runc does when it applies the set; a name that is no
// capability at all is an error (fail closed).
func capMask(names []string) (uint64, error) {
	last, err := capability.LastCap()
	if err != nil {
		return 0, fmt.Errorf("verify: %w", err)
	}
	var m uint64
	for _, n := range names {
		c, ok := capByName(n)
		if !ok {
			return 0, fmt.Errorf("verify: unknown capability %q in spec", n)
		}
		if c <= last && c < 64 {
			m |= 1 << uint(c)
		}
	}
	return m, nil
}

func capByName(name string) (capability.Cap, bool) {
	want := strings.ToLower(strings.TrimPrefix(strings.ToUpper(name), "CAP_"))
	for _, c := range capability.ListKnown() {
		if c.String() == want {
			return c, true
		}
	}
	return 0, false
}

func verifyProcess(r *Report, pid int, s *rspec.Spec) error {
	st, err := readProcStatus(pid)
	if err != nil {
		return err
	}
	return checkStatus(r, st, s)
}

// checkStatus compares the /proc status fields with the spec's process.
func checkStatus(r *Report, st procStatus, s *rspec.Spec) error {
	var caps rspec.LinuxCapabilities
	if s.Process != nil && s.Process.Capabilities != nil {
		caps = *s.Process.Capabilities
	}
	for _, set := range []struct {
		field string
		names []string
	}{
		{"CapBnd", caps.Bounding},
		{"CapEff", caps.Effective},
		{"CapPrm", caps.Permitted},
		{"CapAmb", caps.Ambient},
		{"CapInh", caps.Inheritable},
	} {
		m, err := capMask(set.names)
		if err != nil {
			return err
		}
		obs, ok := st[set.field]
		if !ok {
			return fmt.Errorf("verify: /proc status has no %s", set.field)
		}
		// Compare numerically: the kernel prints 16 hex digits.
		got, err := strconv.ParseUint(obs, 16, 64)
		if err != nil {
			return fmt.Errorf("verify: %s %q: %w", set.field, obs, err)
		}
		r.add("capabilities", fmt.Sprintf("%s %016x", set.field, m), fmt.Sprintf("%s %016x", set.field, got))
	}
	if s.Process != nil && s.Process.NoNewPrivileges {
		r.add("no_new_privs", "NoNewPrivs 1", "NoNewPrivs "+st["NoNewPrivs"])
	}
	if s.Linux != nil && s.Linux.Seccomp != nil {
		// 2 is SECCOMP_MODE_FILTER.
		r.add("seccomp", "Seccomp 2", "Seccomp "+st["Seccomp"])
	}
	if s.Process != nil {
		u := s.Process.User
		// Real, effective, saved and filesystem ids must all be the
		// spec's: a saved uid 0 could be switched back to.
		r.add("uid", idLine("Uid", u.UID), "Uid "+st["Uid"])
		r.add("gid", idLine("Gid", u.GID), "Gid "+st["Gid"])
		groups := strings.Fields(st["Groups"])
		wantRoot := u.GID == 0 || slices.Contains(u.AdditionalGids, 0)
		missing := []string{}
		for _, g := range u.AdditionalGids {
			if !slices.Contains(groups, strconv.FormatUint(uint64(g), 10)) {
				missing = append(missing, strconv.FormatUint(uint64(g), 10))
			}
		}
		var exp string
		if len(u.AdditionalGids) > 0 {
			exp = "supplementary groups include " + fmt.Sprint(u.AdditionalGids)
			if !wantRoot {
				exp += " and not 0"
			}
		} else if !wantRoot {
			exp = "no supplementary group 0"
		} else {
			exp = "any supplementary groups"
		}
		obs := "Groups " + strings.Join(groups, " ")
		ok := len(missing) == 0 && (wantRoot || !slices.Contains(groups, "0"))
		*r = append(*r, Check{Control: "groups", Expected: exp, Observed: obs, OK: ok})
	}
	return nil
}

// idLine is the /proc status line of a process whose real, effective, saved
// and filesystem ids are all id.
func idLine(field string, id uint32) string {
	v := strconv.FormatUint(uint64(id), 10)
	return field + " " + strings.Repeat(v+" ", 3) + v
}

// newNetns tells whether the spec asks for a network namespace of its own
// (type network without a path).
func newNetns(s *rspec.Spec) bool {
	if s.Linux == nil {
		return false
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == rspec.NetworkNamespace && ns.Path == "" {
			return true
		}
	}
	return false
}

func nsInode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("verify: %w", err)
	}
	return st.Ino, nil
}

// verifyNetns checks that pid's network namespace is neither the host's
// (pid 1's) nor bulkhead's own and, when onlyLo (runc, crun), that it has no
// interface but lo. runsc always runs its sandbox in a namespace of its own
// with --network=none, whatever the spec, so there the check is unconditional.
func verifyNetns(r *Report, pid int, s *rspec.Spec, onlyLo bool) error {
	if onlyLo && !newNetns(s) {
		return nil
	}
	ino, err := nsInode(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return err
	}
	self, err := nsInode("/proc/self/ns/net")
	if err != nil {
		return err
	}
	obs := fmt.Sprintf("net:[%d]", ino)
	ok := ino != self
	// /proc/1 may be unreadable in some PID namespaces; bulkhead's own
	// namespace is then the reference.
	if host, err := nsInode("/proc/1/ns/net"); err == nil && host == ino {
		ok = false
	}
	*r = append(*r, Check{Control: "network namespace", Expected: "a network namespace other than the host's", Observed: obs, OK: ok})
	if !onlyLo {
		return nil
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	ifs := netDevInterfaces(data)
	r.add("network interfaces", "lo", strings.Join(ifs, ","))
	return nil
}

// netDevInterfaces lists the interface names of a /proc/PID/net/dev file
// (two header lines, then "name: counters").
func netDevInterfaces(data []byte) []string {
	var ifs []string
	for _, line := range bytes.Split(data, []byte("\n")) {
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		ifs = append(ifs, strings.TrimSpace(string(name)))
	}
	return ifs
}

// verifyRootfs checks that "/" as the container sees it is mounted
// read-only when the spec says so. The last "/" entry is the one on top.
func verifyRootfs(r *Report, pid int, s *rspec.Spec) error {
	if s.Root == nil || !s.Root.Readonly {
		return nil
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return fmt.Errorf("verify: mountinfo of %d: %w", pid, err)
	}
	defer f.Close()
	mounts, err := mountinfo.GetMountsFromReader(f, nil)
	if err != nil {
		return fmt.Errorf("verify: mountinfo of %d: %w", pid, err)
	}
	var root *mountinfo.Info
	for _, m := range mounts {
		if m.Mountpoint == "/" {
			root = m
		}
	}
	if root == nil {
		return fmt.Errorf("verify: no / in mountinfo of %d", pid)
	}
	// Options are the per-mount (VFS) flags, where a read-only bind of
	// the rootfs shows.
	ro := slices.Contains(strings.Split(root.Options, ","), "ro")
	*r = append(*r, Check{Control: "read-only root", Expected: "/ mounted ro", Observed: "/ mounted " + root.Options, OK: ro})
	return nil
}

// verifyRunscFlags checks the sandbox's command line for the flags without
// which runsc would give it a network (--network=none) or ignore the spec's
// seccomp profile (--oci-seccomp).
func verifyRunscFlags(r *Report, pid int) error {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	for _, want := range []struct{ control, flag string }{
		{"runsc network", "--network=none"},
		{"runsc seccomp", "--oci-seccomp"},
	} {
		obs := "absent"
		for _, a := range args {
			if a == want.flag || a == want.flag+"=true" {
				obs = want.flag
			}
		}
		r.add(want.control, want.flag, obs)
	}
	return nil
}

// verifyCgroups compares the spec's linux.resources pids, memory and cpu
// limits with the ones the kernel applied to pid's cgroup.
func verifyCgroups(r *Report, pid int, s *rspec.Spec) error {
	if s.Linux == nil || s.Linux.Resources == nil {
		return nil
	}
	res := s.Linux.Resources
	if res.Pids == nil && res.Memory == nil && res.CPU == nil {
		return nil
	}
	g, err := cgroups.ForPID(pid)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	l, err := g.Limits()
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return checkLimits(r, l, res)
}

// checkLimits compares limits read from the kernel with the spec's. A limit
// the spec sets and the kernel shows unset, absent or different fails.
func checkLimits(r *Report, l cgroups.Limits, res *rspec.LinuxResources) error {
	limit := func(control, file string, want, got int64) {
		r.add(control, file+" "+cgroups.String(want), file+" "+cgroups.String(got))
	}
	// OCI: pids.limit 0 or negative means unlimited.
	if p := res.Pids; p != nil && p.Limit != nil {
		want := *p.Limit
		if want <= 0 {
			want = cgroups.Unlimited
		}
		limit("pids", "pids.max", want, l.PidsMax)
	}
	if m := res.Memory; m != nil {
		if m.Limit != nil {
			limit("memory", "memory limit", ociBytes(*m.Limit), l.MemoryMax)
		}
		// The OCI swap value is memory+swap, as is MemorySwapMax on both
		// versions (cgroups converts v2's swap-only file).
		if m.Swap != nil {
			limit("memory+swap", "memory+swap limit", ociBytes(*m.Swap), l.MemorySwapMax)
		}
	}
	if c := res.CPU; c != nil {
		if c.Quota != nil {
			limit("cpu", "cpu quota", ociBytes(*c.Quota), l.CPUQuota)
		}
		if c.Period != nil {
			if *c.Period > 1<<62 {
				return fmt.Errorf("verify: cpu period %d out of range", *c.Period)
			}
			limit("cpu", "cpu period", int64(*c.Period), l.CPUPeriod)
		}
	}
	return nil
}

// ociBytes maps the OCI "unlimited" (-1, or any negative) to
// cgroups.Unlimited.
func ociBytes(v int64) int64 {
	if v < 0 {
		return cgroups.Unlimited
	}
	return v
}
