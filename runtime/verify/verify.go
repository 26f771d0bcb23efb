package verify

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
	"sync"
	"time"

	"github.com/moby/sys/mountinfo"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/seccomp"
)

// GVisorInsideControls says which controls the host cannot see for a runsc
// container and who answers for them instead. The pid runsc writes is the
// sandbox (the Sentry), not the workload: the workload's capabilities,
// no_new_privs, uid/gid, seccomp filter and read-only root exist only inside
// gVisor's kernel, which enforces them, so the host's /proc shows the
// Sentry's own values. Those controls are checked by the boundary probe
// (cmd/bulkhead-probe) from inside the sandbox. Container checks for runsc only
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

// Report is the outcome of Container, one Check per control.
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

// Container reads from the host what the kernel applied to the container
// whose process is pid and compares it with e, which comes from the
// profile (Expect). For runc and crun pid is the container's init or an
// exec'd process; for runsc it is the sandbox process (see
// GVisorInsideControls). An error means the check itself could not be
// done; the caller fails closed on an error as on a failed check
// (Report.Err).
func Container(pid int, e *Expectation) (Report, error) {
	var r Report
	if e == nil {
		return r, errors.New("verify: no expectation")
	}
	switch e.Backend {
	case "runc", "crun":
		st, err := ReadProcStatus(pid)
		if err != nil {
			return r, err
		}
		if err := checkStatus(&r, st, e); err != nil {
			return r, err
		}
		if err := verifyCwd(&r, pid, st, true); err != nil {
			return r, err
		}
		if err := verifySeccompFilter(&r, pid, e); err != nil {
			return r, err
		}
		if err := verifyNetns(&r, pid, e.LoopbackOnly, true); err != nil {
			return r, err
		}
		if err := verifyNamespaces(&r, pid, e.Namespaces); err != nil {
			return r, err
		}
		if err := verifyIPC(&r, pid, e.IPC); err != nil {
			return r, err
		}
		table, err := mountTable(pid)
		if err != nil {
			return r, err
		}
		if err := verifyRootfs(&r, pid, table, e); err != nil {
			return r, err
		}
		if err := verifyMounts(&r, pid, table, e); err != nil {
			return r, err
		}
	case "runsc":
		if err := verifyNetns(&r, pid, true, false); err != nil {
			return r, err
		}
		if err := verifyRunscFlags(&r, pid); err != nil {
			return r, err
		}
	default:
		return r, fmt.Errorf("verify: unknown backend %q", e.Backend)
	}
	if err := verifyCgroups(&r, pid, e); err != nil {
		return r, err
	}
	return r, nil
}

// Process is Container of an exec'd process: what the process itself
// holds (capabilities, no_new_privs, identity, seccomp). The container's
// namespaces, root and cgroup were verified at create. runsc's processes
// live inside gVisor, where the host cannot see them.
func Process(pid int, e *Expectation) (Report, error) {
	var r Report
	if e == nil {
		return r, errors.New("verify: no expectation")
	}
	if e.Backend == "runsc" {
		return r, nil
	}
	st, err := ReadProcStatus(pid)
	if err != nil {
		return r, err
	}
	if err := checkStatus(&r, st, e); err != nil {
		return r, err
	}
	if err := verifyCwd(&r, pid, st, false); err != nil {
		return r, err
	}
	if len(r.Failed()) > 0 {
		// The verdict is made: the process fails closed whatever its
		// filter, and reading the filter would first have to stop it
		// under ptrace, which a slow host may not deliver in time.
		return r, nil
	}
	return r, verifySeccompFilter(&r, pid, e)
}

// Status is Process without reading the seccomp filter itself (which
// stops the process under ptrace): the /proc status fields alone, a
// filter's presence included.
func Status(pid int, e *Expectation) (Report, error) {
	var r Report
	if e == nil {
		return r, errors.New("verify: no expectation")
	}
	if e.Backend == "runsc" {
		return r, nil
	}
	return r, verifyProcess(&r, pid, e)
}

// ProcStatus holds the /proc/PID/status fields Container reads.
type ProcStatus map[string]string

// ReadProcStatus parses /proc/PID/status ("Name:\tvalue" lines).
func ReadProcStatus(pid int) (ProcStatus, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	return parseProcStatus(f)
}

func parseProcStatus(rd io.Reader) (ProcStatus, error) {
	st := ProcStatus{}
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

func verifyProcess(r *Report, pid int, e *Expectation) error {
	st, err := ReadProcStatus(pid)
	if err != nil {
		return err
	}
	return checkStatus(r, st, e)
}

// checkStatus compares the /proc status fields with the expectation: no
// capability in any set and no_new_privs whatever the spec said, a
// seccomp filter, and the identity.
func checkStatus(r *Report, st ProcStatus, e *Expectation) error {
	for _, field := range []string{"CapBnd", "CapEff", "CapPrm", "CapAmb", "CapInh"} {
		obs, ok := st[field]
		if !ok {
			return fmt.Errorf("verify: /proc status has no %s", field)
		}
		// Compare numerically: the kernel prints 16 hex digits.
		got, err := strconv.ParseUint(obs, 16, 64)
		if err != nil {
			return fmt.Errorf("verify: %s %q: %w", field, obs, err)
		}
		r.add("capabilities", fmt.Sprintf("%s %016x", field, 0), fmt.Sprintf("%s %016x", field, got))
	}
	r.add("no_new_privs", "NoNewPrivs 1", "NoNewPrivs "+st["NoNewPrivs"])
	// 2 is SECCOMP_MODE_FILTER; which filter is verifySeccompFilter's.
	r.add("seccomp", "Seccomp 2", "Seccomp "+st["Seccomp"])
	checkIDs(r, st, e)
	return nil
}

// checkIDs: real, effective, saved and filesystem ids must all be the
// spec's (a saved uid 0 could be switched back to) and none 0 where the
// profile demotes root; the supplementary groups exactly the spec's.
func checkIDs(r *Report, st ProcStatus, e *Expectation) {
	for _, id := range []struct {
		control, field string
		nonRoot        bool
		want           *uint32
	}{
		{"uid", "Uid", e.NonRootUID, userField(e.User, true)},
		{"gid", "Gid", e.NonRootGID, userField(e.User, false)},
	} {
		obs := strings.Fields(st[id.field])
		var exp []string
		if id.want != nil {
			exp = append(exp, idLine(id.field, *id.want))
		}
		if id.nonRoot {
			exp = append(exp, "none 0")
		}
		ok := len(obs) == 4
		for _, v := range obs {
			if id.nonRoot && v == "0" || id.want != nil && v != strconv.FormatUint(uint64(*id.want), 10) {
				ok = false
			}
		}
		if len(exp) == 0 {
			exp = append(exp, "any")
		}
		*r = append(*r, Check{Control: id.control, Expected: strings.Join(exp, ", "), Observed: id.field + " " + strings.Join(obs, " "), OK: ok})
	}
	groups := strings.Fields(st["Groups"])
	var exp []string
	ok := true
	if e.User != nil {
		want := make([]string, 0, len(e.User.AdditionalGids))
		for _, g := range e.User.AdditionalGids {
			want = append(want, strconv.FormatUint(uint64(g), 10))
		}
		slices.Sort(want)
		want = slices.Compact(want)
		have := slices.Clone(groups)
		slices.Sort(have)
		have = slices.Compact(have)
		ok = slices.Equal(want, have)
		if len(want) == 0 {
			exp = append(exp, "no supplementary groups")
		} else {
			exp = append(exp, "Groups "+strings.Join(want, " "))
		}
	}
	if e.NonRootGID {
		exp = append(exp, "no group 0")
		if slices.Contains(groups, "0") {
			ok = false
		}
	}
	if len(exp) == 0 {
		exp = append(exp, "any")
	}
	*r = append(*r, Check{Control: "groups", Expected: strings.Join(exp, ", "), Observed: "Groups " + strings.Join(groups, " "), OK: ok})
}

func userField(u *rspec.User, uid bool) *uint32 {
	switch {
	case u == nil:
		return nil
	case uid:
		return &u.UID
	default:
		return &u.GID
	}
}

// verifySeccompFilter reads the filters the kernel holds for pid and
// requires the profile's compiled program among them, at the place the
// backend installs it: just above the filters pid inherited from bulkhead
// itself. A newer filter is accepted only after the workload ran (it can
// only deny more); at create there is none.
func verifySeccompFilter(r *Report, pid int, e *Expectation) error {
	inherited, err := ownFilterCount()
	if err != nil {
		return err
	}
	filters, err := seccomp.LoadedFilters(pid)
	// A process has one tracer at a time: a concurrent exec's bulkhead
	// reading the same process holds it for a moment (EPERM, TracerPid
	// set). Wait for it rather than judge the process unreadable; it may
	// have let go already when TracerPid is read, so EPERM alone is
	// retried until the bound, and the process fails closed after it.
	for deadline := time.Now().Add(tracerWait); errors.Is(err, unix.EPERM) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		filters, err = seccomp.LoadedFilters(pid)
	}
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	exp := "the profile's filter"
	// Oldest first: bulkhead's own, then the profile's, then any the
	// workload added since, which only narrow it.
	extra := len(filters) - 1 - inherited
	var obs string
	ok := false
	switch {
	case extra < 0:
		obs = fmt.Sprintf("%d filters, %d of them inherited from bulkhead", len(filters), inherited)
	case extra > 0 && !e.WorkloadRan:
		obs = fmt.Sprintf("%d filters, %d more than the profile's and the %d inherited", len(filters), extra, inherited)
	default:
		if err := e.Seccomp.Recognise(filters[inherited]); err != nil {
			obs = fmt.Sprintf("another filter (%d instructions): %v", len(filters[inherited]), err)
		} else {
			obs, ok = exp, true
		}
	}
	*r = append(*r, Check{Control: "seccomp", Expected: exp, Observed: obs, OK: ok})
	return nil
}

// tracerWait bounds the wait for another tracer to let go of a process:
// as long as an exec's whole read may take. On a loaded machine another
// tracer waits seconds for a process starved of CPU to stop, and holds it
// all that time.
const tracerWait = 30 * time.Second

// Unfiltered tells whether pid holds no seccomp filter beyond those
// bulkhead itself runs under, which every process it starts inherits:
// a runc init that has not yet installed the profile's.
func Unfiltered(pid int) bool {
	inherited, err := ownFilterCount()
	if err != nil {
		return false
	}
	st, err := ReadProcStatus(pid)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(st["Seccomp_filters"])
	return err == nil && n <= inherited
}

// ownFilterCount is the number of seccomp filters bulkhead runs under,
// which every process it starts inherits. bulkhead installs none of its
// own, so it is read once: an exec's sweep asks for it at every look at
// every runc init it waits for.
var ownFilterCount = sync.OnceValues(readOwnFilterCount)

func readOwnFilterCount() (int, error) {
	st, err := ReadProcStatus(os.Getpid())
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(st["Seccomp_filters"])
	if err != nil {
		return 0, fmt.Errorf("verify: own Seccomp_filters %q: %w", st["Seccomp_filters"], err)
	}
	return n, nil
}

// idLine is the /proc status line of a process whose real, effective, saved
// and filesystem ids are all id.
func idLine(field string, id uint32) string {
	v := strconv.FormatUint(uint64(id), 10)
	return field + " " + strings.Repeat(v+" ", 3) + v
}

func nsInode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("verify: %w", err)
	}
	return st.Ino, nil
}

// verifyNetns checks, when the profile's network is none, that pid's
// network namespace is neither the host's (pid 1's) nor bulkhead's own
// and, when onlyLo (runc, crun), that it has no interface but lo. It reads
// the namespace pid is in, so a pod's joined namespace is checked as well
// as a new one. runsc always runs its sandbox in a namespace of its own
// with --network=none, whatever the spec, so there the check is
// unconditional.
func verifyNetns(r *Report, pid int, check, onlyLo bool) error {
	if !check {
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
// read-only when the profile or the spec says so. The last "/" entry is
// the one on top.
func verifyRootfs(r *Report, pid int, table []*mountinfo.Info, e *Expectation) error {
	if !e.ReadonlyRoot {
		return nil
	}
	var root *mountinfo.Info
	for _, m := range table {
		if m.Mountpoint == "/" {
			root = m
		}
	}
	if root == nil {
		return fmt.Errorf("verify: no / in mountinfo of %d", pid)
	}
	// Options are the per-mount (VFS) flags, where a read-only bind of
	// the rootfs shows.
	*r = append(*r, Check{Control: "read-only root", Expected: "/ mounted ro", Observed: "/ mounted " + root.Options, OK: hasOption(root, "ro")})
	return nil
}

// verifyRunscFlags checks the sandbox's own command line, as the kernel
// shows it for the process runsc's pid file names, for the flags without
// which runsc would give it a network (--network=none) or ignore the
// spec's seccomp profile (--oci-seccomp). Only runsc's global flags count,
// those before its boot subcommand, and the process must be that sandbox:
// a command line without boot is not.
func verifyRunscFlags(r *Report, pid int) error {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	boot := slices.Index(args, "boot")
	obs := "no boot subcommand: " + strings.Join(args, " ")
	if boot > 0 {
		obs = "runsc boot"
	}
	r.add("runsc sandbox", "runsc boot", obs)
	if boot < 0 {
		boot = 0
	}
	global := args[:boot]
	flags := "only flags that keep the boundary"
	obs = flags
	if len(global) > 0 {
		if why := backend.GVisorFlagRefusal(global[1:]); why != "" {
			obs = why
		}
	}
	r.add("runsc flags", flags, obs)
	for _, want := range []struct{ control, flag string }{
		{"runsc network", "--network=none"},
		{"runsc seccomp", "--oci-seccomp"},
	} {
		obs := "absent"
		for _, a := range global {
			if a == want.flag || a == want.flag+"=true" {
				obs = want.flag
			}
		}
		r.add(want.control, want.flag, obs)
	}
	return nil
}

// verifyCgroups compares the profile's pids, memory, swap and cpu ceilings,
// lowered by the handed spec, with the limits the kernel applied to pid's
// cgroup. A ceiling the kernel shows unset or higher fails.
// Cgroups checks only the limits of pid's cgroups, as after an update.
func Cgroups(pid int, e *Expectation) (Report, error) {
	var r Report
	err := verifyCgroups(&r, pid, e)
	return r, err
}

func verifyCgroups(r *Report, pid int, e *Expectation) error {
	if e.Cgroup != "" {
		if err := verifyCgroupPlace(r, pid, e.Cgroup); err != nil {
			return err
		}
	}
	if e.PidsMax == 0 && e.MemoryMax == 0 && e.CPUs == 0 {
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
	checkLimits(r, l, e)
	return nil
}

// placeControllers are the hierarchies whose limits verification reads.
var placeControllers = []string{"pids", "memory", "cpu"}

// verifyCgroupPlace checks that pid sits in group, the cgroup the policy
// judged, in each hierarchy whose limits are verified: the limits read
// are of the group the process is in, and a backend that reads
// cgroupsPath otherwise (runsc took a systemd slice:prefix:name for a
// path below its caller's own groups) put it in a group the policy never
// judged, shared with another container and charged to the caller.
func verifyCgroupPlace(r *Report, pid int, group string) error {
	m, err := cgroups.MembershipOf(pid)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	var got []string
	ok := true
	if len(m.V1) == 0 {
		got, ok = append(got, "unified "+m.Unified), m.Unified == group
	} else {
		for _, name := range placeControllers {
			g, found := m.V1[name]
			got = append(got, name+" "+g)
			ok = ok && found && g == group
		}
	}
	*r = append(*r, Check{Control: "cgroup", Expected: "in " + group, Observed: strings.Join(got, ", "), OK: ok})
	return nil
}

// checkLimits compares limits read from the kernel with the ceilings.
func checkLimits(r *Report, l cgroups.Limits, e *Expectation) {
	atMost := func(control, what string, ceiling, got int64) {
		ok := got != cgroups.Unlimited && got >= 0 && got <= ceiling
		*r = append(*r, Check{Control: control, Expected: fmt.Sprintf("%s ≤ %d", what, ceiling),
			Observed: what + " " + cgroups.String(got), OK: ok})
	}
	if e.PidsMax > 0 {
		atMost("pids", "pids.max", e.PidsMax, l.PidsMax)
	}
	if e.MemoryMax > 0 {
		atMost("memory", "memory limit", e.MemoryMax, l.MemoryMax)
		// No swap: memory+swap (OCI's and v1's meaning; cgroups converts
		// v2's swap-only file) no larger than the memory ceiling.
		atMost("memory+swap", "memory+swap limit", e.MemoryMax, l.MemorySwapMax)
	}
	if e.CPUs > 0 {
		ok := l.CPUQuota != cgroups.Unlimited && l.CPUQuota > 0 && l.CPUPeriod > 0 &&
			float64(l.CPUQuota) <= e.CPUs*float64(l.CPUPeriod)
		*r = append(*r, Check{Control: "cpu", Expected: fmt.Sprintf("cpu quota/period ≤ %g", e.CPUs),
			Observed: fmt.Sprintf("cpu quota %s period %d", cgroups.String(l.CPUQuota), l.CPUPeriod), OK: ok})
		// A burst lets a period use more than the quota; the cpu rule
		// removes it, so any the kernel shows came from elsewhere.
		// Kernels before 5.14 have no burst file (Absent).
		ok = l.CPUBurst == 0 || l.CPUBurst == cgroups.Absent
		*r = append(*r, Check{Control: "cpu", Expected: "cpu burst 0",
			Observed: "cpu burst " + cgroups.String(l.CPUBurst), OK: ok})
	}
}
