package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
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
	// cpuNoQuotaWall is how long the spin runs when the cgroup has no
	// quota: long enough to show the usage, no longer.
	cpuNoQuotaWall = 1500 * time.Millisecond
	// cpuGVisorWall: under gVisor the probe cannot see the host's cgroup
	// and the host judges; without the host's word (-host-stops-cpu) the
	// spin runs this long for it.
	cpuGVisorWall = 5 * time.Second
	cpuPoll       = 50 * time.Millisecond
)

// cpuCgroup is this process's own cpu cgroup as the container sees it
// (/sys/fs/cgroup, usually the container's cgroup as its root), read
// through bulkhead's cgroups package like the host's evidence.
type cpuCgroup struct {
	group         *cgroups.Group
	quota, period time.Duration // quota < 0: none
}

// cpuReading is one reading of the cgroup's counters.
type cpuReading struct {
	usage     time.Duration
	throttled uint64
	at        time.Time
}

// findCPUCgroup opens this process's cgroup and reads its quota: at the
// path /proc/self/cgroup names when the host's hierarchy is visible, else
// at the mount's root (a cgroup namespace, or runc's bind of the
// container's own group).
func findCPUCgroup() (*cpuCgroup, error) {
	var paths []string
	if m, err := cgroups.MembershipOf(os.Getpid()); err == nil {
		if p := m.V1["cpu"]; p != "" {
			paths = append(paths, p)
		} else if m.Unified != "" {
			paths = append(paths, m.Unified)
		}
	}
	var errs []error
	for _, p := range append(paths, "/") {
		g, err := cgroups.Load(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l, err := g.Limits()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if l.CPUPeriod <= 0 {
			errs = append(errs, fmt.Errorf("cgroup v%d %s: no cpu period (%s)", g.Version(), p, cgroups.String(l.CPUPeriod)))
			continue
		}
		c := &cpuCgroup{group: g, quota: -1, period: time.Duration(l.CPUPeriod) * time.Microsecond}
		if l.CPUQuota > 0 {
			c.quota = time.Duration(l.CPUQuota) * time.Microsecond
		}
		return c, nil
	}
	return nil, errors.Join(errs...)
}

func (c *cpuCgroup) read() (cpuReading, error) {
	r := cpuReading{at: time.Now()}
	e, err := c.group.Events()
	if err != nil {
		return r, err
	}
	r.usage, r.throttled = e.CPUUsage, e.NrThrottled
	return r, nil
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
// the host judges by its cpu.stat (see spinForHost).
func checkCPU(env *probeEnv) Result {
	r := Result{Attempt: fmt.Sprintf("spin %d threads until cpu.stat nr_throttled grows (at most %s); CPU usage against the quota", cpuSpinners, cpuDeadline)}
	prev := runtime.GOMAXPROCS(cpuSpinners + 1)
	defer runtime.GOMAXPROCS(prev)

	if env.gvisor {
		return spinForHost(env, r)
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
		return readErr == nil && last.throttled-start.throttled >= protocol.CPUBites
	}, limit)
	end, err := cg.read()
	if err != nil {
		r.Observed, r.Layer = errName(err), protocol.LayerNone
		r.Detail = "no evidence: cannot read the cpu cgroup: " + err.Error()
		return r
	}
	wall := end.at.Sub(start.at)
	used := end.usage - start.usage
	if used <= 0 {
		// Four threads spun: a group that counted no CPU time for them
		// is one whose usage counter could not be read.
		r.Observed, r.Layer = "no usage", protocol.LayerNone
		r.Detail = fmt.Sprintf("no evidence: the cgroup counted no CPU time over %s of spinning", wall.Round(time.Millisecond))
		return r
	}
	bites := end.throttled - start.throttled
	ratio := float64(used) / float64(wall)
	r.Value = num(float64(int(ratio*1000)) / 1000)
	r.Observed = fmt.Sprintf("nr_throttled +%d", bites)
	quotaText := "no quota"
	if quota > 0 {
		quotaText = fmt.Sprintf("quota %.2f CPU (%s per %s)", quota, cg.quota, cg.period)
	}
	r.Detail = fmt.Sprintf("cgroup v%d: used %s of CPU over %s (%.2f CPU); %s; %d CPUs visible",
		cg.group.Version(), used.Round(time.Millisecond), wall.Round(time.Millisecond), ratio, quotaText, runtime.NumCPU())
	// The quota is enforced per period; allow the periods the window
	// cuts at either end.
	allowed := time.Duration(quota*float64(wall)) + 2*cg.quota
	if why, ok := judgeCPUQuota(quota, env.policy.cpus, used, allowed, bites); ok {
		r.Layer, r.Pass = protocol.LayerCPU, true
	} else {
		r.Layer = protocol.LayerNone
		if strings.HasPrefix(why, noEvidencePrefix) {
			r.Detail = why + "; " + r.Detail
		} else {
			r.Detail += ": " + why
		}
	}
	return r
}

const noEvidencePrefix = "no evidence"

// judgeCPUQuota judges one spin: the group had a quota, no larger than
// the profile's ceiling (0: the profile sets none to compare with), used
// no more CPU than it allows and was throttled. why says what did not
// hold; a why starting with noEvidencePrefix is a spin that showed nothing
// either way.
func judgeCPUQuota(quota, ceiling float64, used, allowed time.Duration, bites uint64) (why string, ok bool) {
	switch {
	case quota == 0:
		return "the cgroup has no CPU quota", false
	case ceiling > 0 && quota > ceiling+1e-9:
		return fmt.Sprintf("the quota is above the policy's %g CPU", ceiling), false
	case used > allowed:
		return fmt.Sprintf("more than the quota allows (%s)", allowed.Round(time.Millisecond)), false
	case bites == 0:
		return noEvidencePrefix + ": the quota never throttled the spin within " + cpuDeadline.String(), false
	}
	return "", true
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

// spinForHost is the cpu attempt under gVisor, whose /sys/fs/cgroup is the
// Sentry's and whose CPU accounting counts host-throttled time: the host
// judges by the container's cpu.stat. With -host-stops-cpu the spin lasts
// until the host, having seen the quota bite, sends SIGUSR1 (at most
// cpuDeadline): a fixed spin on a busy host may never reach the quota,
// and a spin that did not shows nothing about it. Without the host's word
// the spin lasts cpuGVisorWall.
func spinForHost(env *probeEnv, r Result) Result {
	limit, word := cpuGVisorWall, "for the host's cpu.stat"
	done := func(time.Time) bool { return false }
	heard := false
	if env.cpuEnough != nil {
		// A word sent while an earlier attempt ran (its own bites) is
		// not about this spin.
		for len(env.cpuEnough) > 0 {
			<-env.cpuEnough
		}
		limit, word = cpuDeadline, "until the host saw the quota bite"
		done = func(time.Time) bool {
			select {
			case <-env.cpuEnough:
				heard = true
			default:
			}
			return heard
		}
	}
	before, _ := processCPU()
	wall := spinFor(done, limit)
	after, _ := processCPU()
	ratio := float64(after-before) / float64(wall)
	r.Value = num(float64(int(ratio*1000)) / 1000)
	r.Observed = fmt.Sprintf("ratio %.2f (not judged: gVisor)", ratio)
	r.Layer, r.Skipped = protocol.LayerNone, true
	if env.cpuEnough != nil && !heard {
		word = "with no word from the host"
	}
	r.Detail = fmt.Sprintf("spun %s %s; gVisor's CPU accounting counts host-throttled time and its /sys/fs/cgroup is its own, so the host's cpu.stat decides", wall.Round(time.Millisecond), word)
	return r
}
