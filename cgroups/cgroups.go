// Package cgroups reads, from the host, the limits the kernel applied to a
// container's cgroup and the counters that show those limits biting. It is
// what bulkhead's post-create verification and the boundary probe's host-side
// evidence read; it never writes limits (the backend does that).
//
// Both cgroup versions are supported through github.com/containerd/cgroups/v3:
// cgroup1 on legacy and hybrid hosts (controllers under
// /sys/fs/cgroup/<controller>; in hybrid mode the unified hierarchy carries
// no controller bulkhead relies on), cgroup2 on unified hosts.
//
// The libraries do not expose every file: cpu quota/period, pids.events and,
// on v1, an unambiguous pids.max are read here, one single-value file at a
// time (see readLimit and readKey). Everything else comes from the
// libraries' Stat.
package cgroups

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	v1stats "github.com/containerd/cgroups/v3/cgroup1/stats"
	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"
)

// Unlimited is the value of a limit the kernel shows as unset: "max" on v2,
// -1 or the page-rounded maximum on v1.
const Unlimited int64 = -1

// Absent is the value of a limit whose controller file does not exist for
// the group (controller not mounted or not enabled, swap accounting off).
// Verification treats it as "not applied".
const Absent int64 = -2

// Limits are the limits as the kernel applied them. Each is Unlimited,
// Absent or a value.
type Limits struct {
	// Version is the cgroup version the values were read from (1 or 2).
	Version int
	// PidsMax is pids.max.
	PidsMax int64
	// MemoryMax is the memory limit in bytes (v1 memory.limit_in_bytes,
	// v2 memory.max).
	MemoryMax int64
	// MemorySwapMax is memory plus swap in bytes: the meaning of the OCI
	// field linux.resources.memory.swap and of v1
	// memory.memsw.limit_in_bytes. On v2, memory.swap.max counts swap only,
	// so it is converted: memory.max + memory.swap.max, Unlimited when
	// either is "max".
	MemorySwapMax int64
	// CPUQuota is the CPU time in microseconds the group may use per
	// period (v1 cpu.cfs_quota_us, first field of v2 cpu.max).
	CPUQuota int64
	// CPUPeriod is the period in microseconds (v1 cpu.cfs_period_us,
	// second field of v2 cpu.max).
	CPUPeriod int64
	// CPUBurst is the CPU time in microseconds a group may carry over into
	// a period beyond its quota (v1 cpu.cfs_burst_us, v2 cpu.max.burst;
	// Absent before Linux 5.14).
	CPUBurst int64
}

// Events are the counters that show a limit being hit: the host-side
// evidence for the boundary probe. Counters of an absent controller are 0.
type Events struct {
	// PidsMax counts forks refused because pids.max was reached
	// ("max" in pids.events).
	PidsMax uint64
	// OOMKills counts processes the memory cgroup's OOM killer killed
	// (v2 memory.events oom_kill, v1 memory.oom_control oom_kill).
	OOMKills uint64
	// MemoryFailcnt counts how often the v1 memory limit was hit
	// (memory.failcnt); v2 has no such counter and reports memory.events
	// "max" here instead.
	MemoryFailcnt uint64
	// MemoryPeak is the most memory the group has held since it was
	// made (v1 memory.max_usage_in_bytes, v2 memory.peak; 0 before
	// Linux 5.19 on v2).
	MemoryPeak uint64
	// NrThrottled counts periods in which the group was throttled.
	NrThrottled uint64
	// ThrottledTime is the total time the group was throttled.
	ThrottledTime time.Duration
	// CPUUsage is the CPU time the group's tasks used (v2 cpu.stat
	// usage_usec, v1 cpuacct.usage): with the wall time between two
	// readings it shows whether the group took more than its quota.
	CPUUsage time.Duration
}

// Group is one process's cgroup, v1 or v2.
type Group struct {
	version int
	path    string // cgroup path relative to the hierarchy root, e.g. /bulkhead/id

	// v1: controller name → directory of the group in that hierarchy.
	v1dirs map[cgroup1.Name]string
	v1     cgroup1.Cgroup
	// v1 cpuacct directory (same relative path as cpu, as runc makes it;
	// the same directory where cpu and cpuacct are mounted together).
	v1cpuacct string

	// v2: the group's directory and manager.
	v2dir string
	v2    *cgroup2.Manager
}

// Option changes how Load finds a group.
type Option func(*options)

type options struct {
	v2Mountpoint string
	v1Root       string
}

// WithV2Mountpoint makes Load read a cgroup v2 tree mounted (or laid out as
// a fixture) at dir, whatever the host's mode is.
func WithV2Mountpoint(dir string) Option {
	return func(o *options) { o.v2Mountpoint = dir }
}

// WithV1Root makes Load read cgroup v1 hierarchies under dir
// (dir/<controller>/...), whatever the host's mode is.
func WithV1Root(dir string) Option {
	return func(o *options) { o.v1Root = dir }
}

// v1Controllers are the controllers whose limits bulkhead verifies.
var v1Controllers = []cgroup1.Name{cgroup1.Pids, cgroup1.Memory, cgroup1.Cpu}

const (
	defaultV2Mountpoint = "/sys/fs/cgroup"
	defaultV1Root       = "/sys/fs/cgroup"
)

// useV2 tells whether the host's limits live in the unified hierarchy. On a
// hybrid host the unified mount exists but carries no pids, memory or cpu
// controller, so v1 is what the kernel enforces.
func useV2() (bool, error) {
	switch cgroupsv3.Mode() {
	case cgroupsv3.Unified:
		return true, nil
	case cgroupsv3.Legacy, cgroupsv3.Hybrid:
		return false, nil
	default:
		return false, errors.New("cgroups: no cgroup mount found on this host")
	}
}

// V2 tells whether the host's limits live in the unified hierarchy (a
// hybrid host's do not).
func V2() (bool, error) { return useV2() }

// ForPID finds the cgroup of process pid as the host sees it.
func ForPID(pid int) (*Group, error) {
	v2, err := useV2()
	if err != nil {
		return nil, err
	}
	if v2 {
		p, err := cgroup2.PidGroupPath(pid)
		if err != nil {
			return nil, fmt.Errorf("cgroups: pid %d: %w", pid, err)
		}
		return load2(defaultV2Mountpoint, p)
	}
	// pidPathV1 (as cgroup1.PidPath) also localises paths for a bulkhead running in a cgroup
	// namespace (mountinfo root other than /).
	path := pidPathV1(pid)
	dirs := map[cgroup1.Name]string{}
	var first string
	for _, n := range v1Controllers {
		p, err := path(n)
		if errors.Is(err, cgroup1.ErrControllerNotActive) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cgroups: pid %d: %w", pid, err)
		}
		if first == "" {
			first = p
		}
		dirs[n] = p
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("cgroups: pid %d is in none of the pids, memory, cpu hierarchies", pid)
	}
	return load1(defaultV1Root, first, dirs)
}

// Load opens the group at path (a cgroupsPath such as /bulkhead/id, relative
// to the hierarchy root). On v1 the same path is used in every controller's
// hierarchy, as runc's cgroupfs driver does.
func Load(path string, opts ...Option) (*Group, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	path = filepath.Join("/", path)
	if o.v2Mountpoint != "" {
		return load2(o.v2Mountpoint, path)
	}
	root := o.v1Root
	if root == "" {
		v2, err := useV2()
		if err != nil {
			return nil, err
		}
		if v2 {
			return load2(defaultV2Mountpoint, path)
		}
		root = defaultV1Root
	}
	dirs := map[cgroup1.Name]string{}
	for _, n := range v1Controllers {
		dirs[n] = path
	}
	return load1(root, path, dirs)
}

func load2(mountpoint, path string) (*Group, error) {
	m, err := cgroup2.Load(path, cgroup2.WithMountpoint(mountpoint))
	if err != nil {
		return nil, fmt.Errorf("cgroups: %s: %w", path, err)
	}
	return &Group{version: 2, path: path, v2dir: filepath.Join(mountpoint, path), v2: m}, nil
}

func load1(root, path string, rel map[cgroup1.Name]string) (*Group, error) {
	g := &Group{version: 1, path: path, v1dirs: map[cgroup1.Name]string{}}
	var subsystems []cgroup1.Subsystem
	for _, n := range v1Controllers {
		p, ok := rel[n]
		if !ok {
			continue
		}
		hier := filepath.Join(root, string(n))
		if _, err := os.Stat(hier); err != nil {
			continue // controller not mounted on this host
		}
		g.v1dirs[n] = filepath.Join(hier, p)
		switch n {
		case cgroup1.Pids:
			subsystems = append(subsystems, cgroup1.NewPids(root))
		case cgroup1.Memory:
			// OptionalSwap: without swap accounting there are no
			// memory.memsw.* files; MemorySwapMax is then Absent.
			subsystems = append(subsystems, cgroup1.NewMemory(root, cgroup1.OptionalSwap()))
		case cgroup1.Cpu:
			subsystems = append(subsystems, cgroup1.NewCpu(root))
			g.v1cpuacct = filepath.Join(root, "cpuacct", p)
		}
	}
	if len(subsystems) == 0 {
		return nil, fmt.Errorf("cgroups: none of the pids, memory, cpu hierarchies is mounted under %s", root)
	}
	hierarchy := func() ([]cgroup1.Subsystem, error) { return subsystems, nil }
	pathFn := func(n cgroup1.Name) (string, error) {
		if p, ok := rel[n]; ok {
			return p, nil
		}
		return "", cgroup1.ErrControllerNotActive
	}
	c, err := cgroup1.Load(pathFn, cgroup1.WithHierarchy(hierarchy))
	if err != nil {
		return nil, fmt.Errorf("cgroups: %s: %w", path, err)
	}
	g.v1 = c
	return g, nil
}

// Version is 1 or 2.
func (g *Group) Version() int { return g.version }

// Path is the group's path relative to the hierarchy root (on v1, that of
// the first of the pids, memory, cpu hierarchies the process is in).
func (g *Group) Path() string { return g.path }

// Dirs are the group's directories: one per v1 controller, or the v2 one.
func (g *Group) Dirs() []string {
	if g.version == 2 {
		return []string{g.v2dir}
	}
	var out []string
	for _, n := range v1Controllers {
		if d, ok := g.v1dirs[n]; ok {
			out = append(out, d)
		}
	}
	return out
}

// Exists tells whether any of the group's directories is still there.
func (g *Group) Exists() bool {
	for _, d := range g.Dirs() {
		if _, err := os.Stat(d); err == nil {
			return true
		}
	}
	return false
}

// Exists tells whether a cgroupsPath is left anywhere on the host: in any v1
// hierarchy (every controller, not just the three bulkhead reads, since a
// backend creates the path in all of them) or in the unified hierarchy. It
// is what "nothing left behind" checks call.
func Exists(path string, opts ...Option) bool {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	path = filepath.Join("/", path)
	if path == "/" {
		return true
	}
	if o.v2Mountpoint != "" {
		return exists(filepath.Join(o.v2Mountpoint, path))
	}
	root := o.v1Root
	if root == "" {
		root = defaultV1Root
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return false
	}
	for _, e := range entries {
		// On hybrid hosts root/unified is the v2 tree; on unified hosts root
		// itself is, and its children include group directories too, which
		// the check below covers.
		if exists(filepath.Join(root, e.Name(), path)) {
			return true
		}
	}
	return exists(filepath.Join(root, path))
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Limits reads the limits the kernel applied to the group.
func (g *Group) Limits() (Limits, error) {
	if g.version == 2 {
		return g.limits2()
	}
	return g.limits1()
}

func (g *Group) limits1() (Limits, error) {
	l := Limits{Version: 1, PidsMax: Absent, MemoryMax: Absent, MemorySwapMax: Absent, CPUQuota: Absent, CPUPeriod: Absent, CPUBurst: Absent}
	// Every limit is one single-value file read with readLimit: the
	// library's Stat reads every statistic of every controller, each in a
	// goroutine of its own (memory.stat alone is some forty lines), which
	// was a fifth of what verification cost a create; its pids reader
	// turns "max" into 0, and it has no reader for the cpu files.
	var err error
	if d, ok := g.v1dirs[cgroup1.Memory]; ok {
		if l.MemoryMax, err = readV1Bytes(filepath.Join(d, "memory.limit_in_bytes")); err != nil {
			return l, err
		}
		if l.MemorySwapMax, err = readV1Bytes(filepath.Join(d, "memory.memsw.limit_in_bytes")); err != nil {
			return l, err
		}
	}
	if d, ok := g.v1dirs[cgroup1.Pids]; ok {
		if l.PidsMax, err = readLimit(filepath.Join(d, "pids.max")); err != nil {
			return l, err
		}
	}
	if d, ok := g.v1dirs[cgroup1.Cpu]; ok {
		if l.CPUQuota, err = readLimit(filepath.Join(d, "cpu.cfs_quota_us")); err != nil {
			return l, err
		}
		if l.CPUPeriod, err = readLimit(filepath.Join(d, "cpu.cfs_period_us")); err != nil {
			return l, err
		}
		if l.CPUBurst, err = readLimit(filepath.Join(d, "cpu.cfs_burst_us")); err != nil {
			return l, err
		}
	}
	return l, nil
}

// v1Stat runs the library's Stat, ignoring controllers whose directory is
// gone (the caller reports those as Absent).
func (g *Group) v1Stat() (*v1stats.Metrics, error) {
	st, err := g.v1.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %s: %w", g.path, err)
	}
	return st, nil
}

// readV1Bytes is readLimit of a v1 memory file, whose "unlimited" is
// v1Bytes'.
func readV1Bytes(path string) (int64, error) {
	v, err := readLimit(path)
	if err != nil || v < 0 {
		return v, err
	}
	return v1Bytes(uint64(v)), nil
}

// v1Bytes maps v1's "unlimited" (PAGE_COUNTER_MAX pages: 9223372036854771712
// with 4 KiB pages, a little less with larger pages) to Unlimited. No real
// limit is anywhere near 2^62 bytes.
func v1Bytes(v uint64) int64 {
	if v >= 1<<62 {
		return Unlimited
	}
	return int64(v)
}

func (g *Group) limits2() (Limits, error) {
	l := Limits{Version: 2, PidsMax: Absent, MemoryMax: Absent, MemorySwapMax: Absent, CPUQuota: Absent, CPUPeriod: Absent, CPUBurst: Absent}
	if !exists(g.v2dir) {
		return l, fmt.Errorf("cgroups: %s: %w", g.v2dir, os.ErrNotExist)
	}
	st, err := g.v2.StatFiltered(cgroup2.StatPids | cgroup2.StatMemory)
	if err != nil {
		return l, fmt.Errorf("cgroups: %s: %w", g.path, err)
	}
	// The library reads a missing file as 0, so presence is checked first:
	// a controller not enabled in the parent's subtree_control has no files.
	if st.Pids != nil && exists(filepath.Join(g.v2dir, "pids.max")) {
		l.PidsMax = v2Value(st.Pids.Limit)
	}
	if st.Memory != nil && exists(filepath.Join(g.v2dir, "memory.max")) {
		l.MemoryMax = v2Value(st.Memory.UsageLimit)
		if exists(filepath.Join(g.v2dir, "memory.swap.max")) {
			l.MemorySwapMax = memorySwap2(l.MemoryMax, v2Value(st.Memory.SwapLimit))
		}
	}
	// cpu.max ("$QUOTA $PERIOD", quota may be "max"): the library writes it
	// but has no reader, so it is parsed here.
	if data, err := os.ReadFile(filepath.Join(g.v2dir, "cpu.max")); err == nil {
		f := strings.Fields(string(data))
		if len(f) != 2 {
			return l, fmt.Errorf("cgroups: %s/cpu.max: unexpected %q", g.v2dir, strings.TrimSpace(string(data)))
		}
		if l.CPUQuota, err = parseLimit(f[0]); err != nil {
			return l, fmt.Errorf("cgroups: %s/cpu.max: %w", g.v2dir, err)
		}
		if l.CPUPeriod, err = parseLimit(f[1]); err != nil {
			return l, fmt.Errorf("cgroups: %s/cpu.max: %w", g.v2dir, err)
		}
	} else if !os.IsNotExist(err) {
		return l, fmt.Errorf("cgroups: %w", err)
	}
	if l.CPUBurst, err = readLimit(filepath.Join(g.v2dir, "cpu.max.burst")); err != nil {
		return l, err
	}
	return l, nil
}

// v2Value maps the library's "max" (MaxUint64) to Unlimited.
func v2Value(v uint64) int64 {
	if v > math.MaxInt64 {
		return Unlimited
	}
	return int64(v)
}

// Events reads the group's limit-hit counters.
func (g *Group) Events() (Events, error) {
	var e Events
	if g.version == 2 {
		st, err := g.v2.StatFiltered(cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatMemoryEvents)
		if err != nil {
			return e, fmt.Errorf("cgroups: %s: %w", g.path, err)
		}
		if st.MemoryEvents != nil {
			e.OOMKills = st.MemoryEvents.OomKill
			e.MemoryFailcnt = st.MemoryEvents.Max
		}
		if st.Memory != nil {
			e.MemoryPeak = st.Memory.MaxUsage
		}
		if st.CPU != nil {
			e.NrThrottled = st.CPU.NrThrottled
			e.ThrottledTime = time.Duration(st.CPU.ThrottledUsec) * time.Microsecond
			e.CPUUsage = time.Duration(st.CPU.UsageUsec) * time.Microsecond
		}
		if e.PidsMax, err = g.PidsRefused(); err != nil {
			return e, err
		}
		return e, nil
	}
	st, err := g.v1Stat()
	if err != nil {
		return e, err
	}
	if st.MemoryOomControl != nil {
		e.OOMKills = st.MemoryOomControl.OomKill
	}
	if st.Memory != nil && st.Memory.Usage != nil {
		e.MemoryFailcnt = st.Memory.Usage.Failcnt
		e.MemoryPeak = st.Memory.Usage.Max
	}
	if st.CPU != nil && st.CPU.Throttling != nil {
		e.NrThrottled = st.CPU.Throttling.ThrottledPeriods
		e.ThrottledTime = time.Duration(st.CPU.Throttling.ThrottledTime) // v1 cpu.stat is in ns
	}
	if g.v1cpuacct != "" {
		// Read here, not through the library's cpuacct controller, so
		// the hierarchies bulkhead verifies stay pids, memory, cpu.
		if n, err := readLimit(filepath.Join(g.v1cpuacct, "cpuacct.usage")); err == nil && n >= 0 {
			e.CPUUsage = time.Duration(n) // ns
		}
	}
	if e.PidsMax, err = g.PidsRefused(); err != nil {
		return e, err
	}
	return e, nil
}

// PidsRefused is Events' PidsMax alone: one file read, where Events reads
// every controller's statistics.
func (g *Group) PidsRefused() (uint64, error) {
	if g.version == 2 {
		return readKey(filepath.Join(g.v2dir, "pids.events"), "max")
	}
	d, ok := g.v1dirs[cgroup1.Pids]
	if !ok {
		return 0, nil
	}
	return readKey(filepath.Join(d, "pids.events"), "max")
}

// readLimit reads a single-value limit file the library has no reader for
// (plain strconv on that one file). A missing file is Absent.
func readLimit(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return Absent, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cgroups: %w", err)
	}
	v, err := parseLimit(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("cgroups: %s: %w", path, err)
	}
	return v, nil
}

// parseLimit reads "max" or a negative number as Unlimited.
func parseLimit(s string) (int64, error) {
	if s == "max" {
		return Unlimited, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return Unlimited, nil
	}
	return v, nil
}

// readKey reads key from a flat-keyed file ("key value" lines) the library
// has no reader for (pids.events). A missing file or key is 0: the kernel
// only has pids.events since 4.3.
func readKey(path, key string) (uint64, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cgroups: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			v, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cgroups: %s: %w", path, err)
			}
			return v, nil
		}
	}
	return 0, nil
}

// String shows a limit value as the kernel would: "max" for Unlimited.
func String(v int64) string {
	switch v {
	case Unlimited:
		return "max"
	case Absent:
		return "absent"
	}
	return strconv.FormatInt(v, 10)
}

// GroupDirs are the directories of the group at path (a cgroupsPath) in
// each hierarchy of the host that has it, each with its identity (the
// directory's device and inode): a group removed and made again under the
// same path gets another. A co-mounted hierarchy's link (cpu ->
// cpu,cpuacct) is not counted again, and only a hierarchy's own tree is
// looked in, never its mount directory (a group named /unified is not the
// hybrid host's v2 tree).
func GroupDirs(path string) (map[string]string, error) {
	path = filepath.Join("/", path)
	if path == "/" {
		return nil, nil
	}
	dirs := []string{filepath.Join(defaultV2Mountpoint, path)}
	if cgroupsv3.Mode() != cgroupsv3.Unified {
		entries, err := os.ReadDir(defaultV1Root)
		if err != nil {
			return nil, err
		}
		dirs = dirs[:0]
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(defaultV1Root, e.Name(), path))
			}
		}
	}
	out := map[string]string{}
	for _, d := range dirs {
		var st unix.Stat_t
		if unix.Lstat(d, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			out[d] = fmt.Sprintf("%d:%d", st.Dev, st.Ino)
		}
	}
	return out, nil
}
