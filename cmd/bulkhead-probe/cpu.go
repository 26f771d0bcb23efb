package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

const (
	cpuSpinners = 4
	// cpuDeadline bounds the spin: the quota must have bitten by then.
	// On a host whose other work leaves the sandbox less than its quota,
	// a bite takes longer, not never: CFS hands the group its share in
	// bursts, and any period in which the group gets its quota's worth
	// is throttled.
	// Measured: a CRI container got 0.31 CPU over 20 s beside two whole
	// test suites on 2 cores, and its quota never bit in that time.
	cpuDeadline = 40 * time.Second
	// cpuBites is how many throttled periods end the spin early.
	cpuBites = 3
	// cpuNoQuotaWall is how long the spin runs when the cgroup has no
	// quota: long enough to show the usage, no longer.
	cpuNoQuotaWall = 1500 * time.Millisecond
	// cpuGVisorWall: under gVisor the probe cannot see the host's cgroup
	// and the host judges; the spin runs this long for it.
	cpuGVisorWall = 5 * time.Second
	// cpuCeiling is the default profile's quota in CPUs.
	cpuCeiling = 1.0
	cpuPoll    = 50 * time.Millisecond
)

// cpuCgroup is this process's own cpu cgroup as the container sees it
// (/sys/fs/cgroup, usually the container's cgroup as its root).
type cpuCgroup struct {
	version       int
	quota, period time.Duration // quota < 0: none
	stat          string        // cpu.stat
	usage         string        // v1 cpuacct.usage; v2: usage_usec in stat
}

// cpuReading is one reading of the cgroup's counters.
type cpuReading struct {
	usage     time.Duration
	throttled uint64
	at        time.Time
}

// ownCgroupPaths maps each v1 controller (and "" for v2) to this
// process's cgroup path from /proc/self/cgroup.
func ownCgroupPaths() map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// cgroupDir finds the directory of this process's group below mount: the
// full path when the host's hierarchy is visible, else the mount itself
// (a cgroup namespace, or runc's bind of the container's own group).
func cgroupDir(mount, path, file string) (string, bool) {
	for _, d := range []string{filepath.Join(mount, path), mount} {
		if _, err := os.Stat(filepath.Join(d, file)); err == nil {
			return d, true
		}
	}
	return "", false
}

// findCPUCgroup locates cpu.stat and the usage counter of this process's
// cgroup, v2 first, and reads the quota.
func findCPUCgroup() (*cpuCgroup, error) {
	paths := ownCgroupPaths()
	if d, ok := cgroupDir("/sys/fs/cgroup", paths[""], "cpu.max"); ok {
		b, err := os.ReadFile(filepath.Join(d, "cpu.max"))
		if err != nil {
			return nil, err
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			return nil, fmt.Errorf("%s/cpu.max: %q", d, b)
		}
		c := &cpuCgroup{version: 2, stat: filepath.Join(d, "cpu.stat"), quota: -1}
		if f[0] != "max" {
			q, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s/cpu.max: %w", d, err)
			}
			c.quota = time.Duration(q) * time.Microsecond
		}
		p, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s/cpu.max: %w", d, err)
		}
		c.period = time.Duration(p) * time.Microsecond
		return c, nil
	}
	var cpuDir, acctDir string
	for _, m := range []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"} {
		if d, ok := cgroupDir(m, paths["cpu"], "cpu.cfs_quota_us"); ok {
			cpuDir = d
			break
		}
	}
	for _, m := range []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct"} {
		if d, ok := cgroupDir(m, paths["cpuacct"], "cpuacct.usage"); ok {
			acctDir = d
			break
		}
	}
	if cpuDir == "" || acctDir == "" {
		var seen []string
		if ents, err := os.ReadDir("/sys/fs/cgroup"); err == nil {
			for _, e := range ents {
				seen = append(seen, e.Name())
			}
		}
		return nil, fmt.Errorf("no cpu cgroup visible under /sys/fs/cgroup (neither cpu.max nor cpu.cfs_quota_us with cpuacct.usage; entries %v; own groups %v)", seen, paths)
	}
	q, err := readInt(filepath.Join(cpuDir, "cpu.cfs_quota_us"))
	if err != nil {
		return nil, err
	}
	p, err := readInt(filepath.Join(cpuDir, "cpu.cfs_period_us"))
	if err != nil {
		return nil, err
	}
	c := &cpuCgroup{version: 1, stat: filepath.Join(cpuDir, "cpu.stat"), usage: filepath.Join(acctDir, "cpuacct.usage"),
		quota: -1, period: time.Duration(p) * time.Microsecond}
	if q > 0 {
		c.quota = time.Duration(q) * time.Microsecond
	}
	return c, nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

func statKey(stat, key string) (uint64, error) {
	for _, line := range strings.Split(stat, "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("cpu.stat has no %s", key)
}

func (c *cpuCgroup) read() (cpuReading, error) {
	r := cpuReading{at: time.Now()}
	b, err := os.ReadFile(c.stat)
	if err != nil {
		return r, err
	}
	if r.throttled, err = statKey(string(b), "nr_throttled"); err != nil {
		return r, err
	}
	if c.version == 2 {
		us, err := statKey(string(b), "usage_usec")
		r.usage = time.Duration(us) * time.Microsecond
		return r, err
	}
	ns, err := readInt(c.usage)
	r.usage = time.Duration(ns)
	return r, err
}

// quotaCPUs is the quota in CPUs (0 when there is none).
func (c *cpuCgroup) quotaCPUs() float64 {
	if c.quota <= 0 || c.period <= 0 {
		return 0
	}
	return float64(c.quota) / float64(c.period)
}

// checkCPU: spin four threads until the cgroup's own cpu.stat shows the
// quota throttling them (nr_throttled growing), at most cpuDeadline, and
// compare the CPU the group used (cpuacct.usage, v2 usage_usec) with what
// the quota allows over the same wall time. The verdict needs both: the
// kernel throttled the group, and the group took no more than its quota.
//
// Judged by the cgroup's counters rather than by the spin's CPU/wall ratio,
// because the ratio depends on what else runs on the host: a busy host
// gives an unlimited spin a ratio of 1 too, and a spin that never reached
// its quota shows nothing about the quota. Spinning until the quota bites
// gives the same verdict on a busy and an idle host.
//
// GOMAXPROCS is raised for the spin on purpose: since Go 1.25 the runtime
// sizes GOMAXPROCS from the cgroup CPU quota, which would cap the spin at
// one thread by itself — a program limiting itself is validation, not the
// cpu cgroup's containment.
//
// Under gVisor (-gvisor) /sys/fs/cgroup is the Sentry's, not the host's:
// the probe spins for cpuGVisorWall and leaves the verdict to the host's
// cpu.stat.
func checkCPU(env *probeEnv) Result {
	r := Result{Attempt: fmt.Sprintf("spin %d threads until cpu.stat nr_throttled grows (at most %s); CPU usage against the quota", cpuSpinners, cpuDeadline)}
	prev := runtime.GOMAXPROCS(cpuSpinners + 1)
	defer runtime.GOMAXPROCS(prev)

	if env.gvisor {
		before, _ := processCPU()
		wall := spinFor(func(time.Time) bool { return false }, cpuGVisorWall)
		after, _ := processCPU()
		ratio := float64(after-before) / float64(wall)
		r.Value = num(float64(int(ratio*1000)) / 1000)
		r.Observed = fmt.Sprintf("ratio %.2f (not judged: gVisor)", ratio)
		r.Layer, r.Skipped = protocol.LayerNone, true
		r.Detail = fmt.Sprintf("spun %s; gVisor's CPU accounting counts host-throttled time and its /sys/fs/cgroup is its own, so the host's cpu.stat decides", wall.Round(time.Millisecond))
		return r
	}

	cg, err := findCPUCgroup()
	if err != nil {
		r.Observed, r.Layer = "no cgroup", protocol.LayerNone
		r.Detail = "no evidence: " + err.Error()
		return r
	}
	quota := cg.quotaCPUs()
	start, err := cg.read()
	if err != nil {
		r.Observed, r.Layer = errName(err), protocol.LayerNone
		r.Detail = "no evidence: cannot read the cpu cgroup: " + err.Error()
		return r
	}
	limit := cpuDeadline
	if quota == 0 {
		limit = cpuNoQuotaWall
	}
	var last cpuReading
	var readErr error
	spinFor(func(now time.Time) bool {
		last, readErr = cg.read()
		return readErr == nil && last.throttled-start.throttled >= cpuBites
	}, limit)
	end, err := cg.read()
	if err != nil {
		r.Observed, r.Layer = errName(err), protocol.LayerNone
		r.Detail = "no evidence: cannot read the cpu cgroup: " + err.Error()
		return r
	}
	wall := end.at.Sub(start.at)
	used := end.usage - start.usage
	bites := end.throttled - start.throttled
	ratio := float64(used) / float64(wall)
	r.Value = num(float64(int(ratio*1000)) / 1000)
	r.Observed = fmt.Sprintf("nr_throttled +%d", bites)
	quotaText := "no quota"
	if quota > 0 {
		quotaText = fmt.Sprintf("quota %.2f CPU (%s per %s)", quota, cg.quota, cg.period)
	}
	r.Detail = fmt.Sprintf("cgroup v%d: used %s of CPU over %s (%.2f CPU); %s; %d CPUs visible",
		cg.version, used.Round(time.Millisecond), wall.Round(time.Millisecond), ratio, quotaText, runtime.NumCPU())
	// The quota is enforced per period; allow the periods the window
	// cuts at either end.
	allowed := time.Duration(quota*float64(wall)) + 2*cg.quota
	switch {
	case quota == 0:
		r.Layer = protocol.LayerNone
		r.Detail += ": the cgroup has no CPU quota"
	case quota > cpuCeiling+1e-9:
		r.Layer = protocol.LayerNone
		r.Detail += fmt.Sprintf(": the quota is above the policy's %.0f CPU", cpuCeiling)
	case used > allowed:
		r.Layer = protocol.LayerNone
		r.Detail += fmt.Sprintf(": more than the quota allows (%s)", allowed.Round(time.Millisecond))
	case bites == 0:
		r.Layer = protocol.LayerNone
		r.Detail = "no evidence: the quota never throttled the spin within " + cpuDeadline.String() + "; " + r.Detail
	default:
		r.Layer, r.Pass = protocol.LayerCPU, true
	}
	return r
}

// spinFor burns CPU on cpuSpinners locked threads until done reports true
// (polled every cpuPoll) or limit has passed, and returns the wall time.
func spinFor(done func(time.Time) bool, limit time.Duration) time.Duration {
	var stop atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < cpuSpinners; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spin(&stop)
		}()
	}
	deadline := start.Add(limit)
	for now := time.Now(); now.Before(deadline) && !done(now); now = time.Now() {
		time.Sleep(cpuPoll)
	}
	stop.Store(true)
	wg.Wait()
	return time.Since(start)
}

// spin burns CPU on a locked OS thread until stop is set.
func spin(stop *atomic.Bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	x := uint64(1)
	for !stop.Load() {
		for j := 0; j < 10000; j++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	runtime.KeepAlive(x)
}

// processCPU is this process's CPU time so far.
func processCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
