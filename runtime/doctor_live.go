package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/doctor"
	"bulkhead.dev/bulkhead/runtime/probe"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/verify"
)

// liveTimeout bounds one live check: create, verification and delete.
const liveTimeout = time.Minute

// doctorLive creates one throwaway container on backend through
// bulkhead's own create path (the probe's careless bundle, the default
// profile), reports the verification create recorded and how long create
// took, and deletes it. The container is never started: verification
// happens at create, before the workload could run.
func doctorLive(ctx context.Context, g *Globals, opt doctor.Options, name string) doctor.Check {
	c := doctor.Check{Name: "live " + name, Looked: "bulkhead create of a throwaway container, default profile"}
	if os.Geteuid() != 0 {
		c.Status, c.Found = doctor.StatusWarn, "not run: creating a container needs root; no evidence either way"
		c.Fix = "run bulkhead doctor as root"
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, liveTimeout)
	defer cancel()
	sel, err := probeSelect(g, ProbeOptions{Backend: name})
	if err != nil {
		c.Status, c.Found = doctor.StatusFail, err.Error()
		return c
	}
	self := opt.Bulkhead
	if self == "" {
		if self, err = os.Executable(); err != nil {
			c.Status, c.Found = doctor.StatusFail, err.Error()
			return c
		}
	}
	probeBin, err := probe.FindBinary(self)
	if err != nil {
		c.Status, c.Found = doctor.StatusWarn, "not run: "+err.Error()
		c.Fix = "install bulkhead-probe next to bulkhead (make install does): its static binary is the throwaway rootfs"
		return c
	}
	work, err := os.MkdirTemp("", "bulkhead-doctor-")
	if err != nil {
		c.Status, c.Found = doctor.StatusFail, err.Error()
		return c
	}
	id := strings.Replace(probeID(), "probe", "doctor", 1)
	p := &probeRun{g: g, opt: ProbeOptions{Bulkhead: self}, sel: sel,
		rep: &probe.Report{ID: id}, work: work, gvisor: sel.Backend.IsGVisor()}
	if !g.SystemdCgroup {
		p.cgroupsPath = DefaultCgroupsPath(g.Root, id)
	}
	c.Looked = fmt.Sprintf("bulkhead create %s on %s, profile %s", id, sel.Backend.Path, sel.Profile.Name)
	defer func() {
		if err := p.cleanup(); err != nil {
			logrus.Warnf("bulkhead: doctor cleanup: %v", err)
			c.Status, c.Found = doctor.StatusFail, c.Found+"; cleanup failed: "+err.Error()
			c.Fix = "remove what is named by hand"
		}
	}()
	if p.bundle, err = probe.MakeBundle(work, probeBin, nil, [2]int{int(sel.Profile.UID), int(sel.Profile.GID)}); err != nil {
		c.Status, c.Found = doctor.StatusFail, "bundle: "+err.Error()
		return c
	}
	// The never-started container keeps create's stdio: a drained log,
	// so nothing waits on it.
	log, err := newDrainedLog(filepath.Join(work, "create.log"))
	if err != nil {
		c.Status, c.Found = doctor.StatusFail, err.Error()
		return c
	}
	create := exec.CommandContext(ctx, self, p.bulkheadArgv("create", "--bundle", p.bundle.Dir, "--pid-file", filepath.Join(work, "init.pid"), id)[1:]...)
	create.Stdout, create.Stderr = log.w, log.w
	create.Cancel = func() error { return create.Process.Signal(syscall.SIGTERM) }
	create.WaitDelay = backend.Timeout
	p.created = true
	start := time.Now()
	err = create.Run()
	took := time.Since(start).Round(time.Millisecond)
	log.handed()
	if err != nil {
		c.Status, c.Found = doctor.StatusFail, fmt.Sprintf("create refused or failed after %s (%v): %s", took, err, log.tail(5*time.Second))
		c.Fix = "no container can run on this backend; the lines above name the cause"
		return c
	}
	reg, err := state.OpenRegistry(g.Root)
	if err == nil {
		var f *state.Findings
		if f, err = reg.Findings(id); err == nil {
			return liveVerdict(c, verify.Report(f.Checks), took)
		}
	}
	c.Status, c.Found = doctor.StatusFail, fmt.Sprintf("created in %s but its record is unreadable: %v", took, err)
	return c
}

// liveVerdict judges the verification create recorded. No checks at all
// is no evidence, so it fails like a mismatch.
func liveVerdict(c doctor.Check, r verify.Report, took time.Duration) doctor.Check {
	failed := r.Failed()
	switch {
	case len(r) == 0:
		c.Status, c.Found = doctor.StatusFail, fmt.Sprintf("created in %s with no verification recorded", took)
		c.Fix = "report this: create must verify before it succeeds"
	case len(failed) > 0:
		c.Status, c.Found = doctor.StatusFail, fmt.Sprintf("created in %s; %d of %d checks differ: %v", took, len(failed), len(r), r.Err())
		c.Fix = "the kernel did not apply the boundary as asked; see the checks above for the cause"
	default:
		var names []string
		for _, ch := range r {
			if !slices.Contains(names, ch.Control) {
				names = append(names, ch.Control)
			}
		}
		c.Status, c.Found = doctor.StatusOK, fmt.Sprintf("created and verified in %s: %d checks as expected (%s)", took, len(r), strings.Join(names, ", "))
	}
	return c
}
