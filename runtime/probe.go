package runtime

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/probe"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/workspace"
)

// ProbeOptions configure one `bulkhead probe`.
type ProbeOptions struct {
	// Profile and Backend override the selection (as --profile and
	// --backend do for create); empty means what create would choose.
	Profile string
	Backend string
	// Bulkhead is the bulkhead executable that creates, starts and deletes
	// the probe's container (default: the running executable), so policy,
	// backend and verification are exactly create's.
	Bulkhead string
	// ProbeBinary is the static bulkhead-probe (default: next to Bulkhead,
	// else on PATH).
	ProbeBinary string
	// Timeout bounds the whole run (default 2 minutes).
	Timeout time.Duration
	// EgressTarget is the listed destination the egress control tries
	// through the broker (default: the profile's first entry naming one
	// host).
	EgressTarget string
}

// afterDoneWait is how long the host waits, under gVisor, for the memory
// attempt the probe makes after its done line to end the sandbox.
const afterDoneWait = 30 * time.Second

// Probe runs the boundary probe in a throwaway container through bulkhead's
// own create path (the executable in opt.Bulkhead, with the caller's
// globals), reads its lines, samples the container's cgroup counters as
// each line arrives, and judges every control. The returned report is
// complete even when a control failed; err is set only when the probe
// could not run (it is also in the report). Everything it made is removed
// before it returns: container, record, cgroup, bundle and workspace.
func Probe(ctx context.Context, g *Globals, opt ProbeOptions) (*probe.Report, error) {
	if opt.Timeout == 0 {
		opt.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()

	sel, err := probeSelect(g, opt)
	if err != nil {
		return nil, err
	}
	if opt.Bulkhead == "" {
		if opt.Bulkhead, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
	}
	if opt.ProbeBinary == "" {
		if opt.ProbeBinary, err = probe.FindBinary(opt.Bulkhead); err != nil {
			return nil, err
		}
	} else if err := probe.CheckStatic(opt.ProbeBinary); err != nil {
		return nil, err
	}
	gvisor := sel.Backend.IsGVisor()
	rep := &probe.Report{ID: probeID(), Profile: sel.Profile.Name, Mode: string(sel.Profile.Mode), Backend: sel.Backend.Name}

	work, err := os.MkdirTemp("", "bulkhead-probe-")
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	p := &probeRun{g: g, opt: opt, sel: sel, rep: rep, work: work, gvisor: gvisor}
	if !g.SystemdCgroup {
		p.cgroupsPath = DefaultCgroupsPath(g.Root, rep.ID)
	}
	defer func() {
		if cerr := p.cleanup(); cerr != nil {
			logrus.Warnf("bulkhead: probe cleanup: %v", cerr)
			if rep.Error == "" {
				rep.Error = "cleanup: " + cerr.Error()
			}
			rep.Pass = false
		}
	}()
	if err := p.run(ctx); err != nil {
		rep.Error = err.Error()
		rep.Pass = false
		return rep, err
	}
	return rep, nil
}

// probeSelect resolves profile and backend the way create will, so the
// probe knows beforehand whether it runs in gVisor.
func probeSelect(g *Globals, opt ProbeOptions) (*Selection, error) {
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, err
	}
	sg := *g
	if opt.Profile != "" {
		sg.Profile = opt.Profile
	}
	if opt.Backend != "" {
		sg.Backend = opt.Backend
	}
	sel, err := Select(cfg, &sg, nil)
	if err != nil {
		return nil, err
	}
	return sel, nil
}

func probeID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("bulkhead-probe-%d-%s", os.Getpid(), hex.EncodeToString(b))
}

// probeRun is one probe on its way; cleanup undoes whatever it made.
type probeRun struct {
	g           *Globals
	opt         ProbeOptions
	sel         *Selection
	rep         *probe.Report
	work        string
	gvisor      bool
	cgroupsPath string
	bundle      *probe.Bundle
	created     bool
}

// bulkheadArgv is the command line of one bulkhead verb for the probe's
// container, with the caller's globals and the probe's selection.
func (p *probeRun) bulkheadArgv(verb string, args ...string) []string {
	g := *p.g
	g.Profile, g.Backend = p.sel.Profile.Name, p.sel.Backend.Name
	return g.selfArgv(p.opt.Bulkhead, verb, args...)
}

func (p *probeRun) run(ctx context.Context) error {
	args := []string{"-workspace", "/workspace", "-setuid", "/bin/" + probe.BinaryName + "-suid"}
	egressArgs, err := probeEgressArgs(&p.sel.Profile, p.opt.EgressTarget)
	if err != nil {
		return err
	}
	args = append(args, egressArgs...)
	limitArgs, err := probeLimitArgs(&p.sel.Profile)
	if err != nil {
		return err
	}
	args = append(args, limitArgs...)
	if p.gvisor {
		args = append(args, "-gvisor", "-memory-after-done", "-host-stops-cpu")
	}
	owner := [2]int{int(p.sel.Profile.UID), int(p.sel.Profile.GID)}
	if p.bundle, err = probe.MakeBundle(p.work, p.opt.ProbeBinary, args, owner); err != nil {
		return fmt.Errorf("probe bundle: %w", err)
	}

	// The container's stdout is this pipe; its stderr and bulkhead's go to
	// a drained log.
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer outR.Close()
	errLog, err := newDrainedLog(filepath.Join(p.work, "stderr.log"))
	if err != nil {
		outW.Close()
		return err
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		outW.Close()
		return err
	}
	defer devNull.Close()

	pidFile := filepath.Join(p.work, "init.pid")
	create := exec.CommandContext(ctx, p.opt.Bulkhead, p.bulkheadArgv("create", "--bundle", p.bundle.Dir, "--pid-file", pidFile, p.rep.ID)[1:]...)
	create.Stdin, create.Stdout, create.Stderr = devNull, outW, errLog.w
	// Interrupted, bulkhead create must still undo what it made: it gets
	// SIGTERM (which it forwards to the backend), not SIGKILL.
	create.Cancel = func() error { return create.Process.Signal(syscall.SIGTERM) }
	create.WaitDelay = backend.Timeout
	p.created = true // a failed create is cleaned up by create; delete is harmless
	err = create.Run()
	outW.Close() // the container holds its own copy
	errLog.handed()
	if err != nil {
		return fmt.Errorf("create refused or failed (%v): %s", err, errLog.tail(5*time.Second))
	}

	reg, err := state.OpenRegistry(p.g.Root)
	if err != nil {
		return err
	}
	rec, err := reg.Get(p.rep.ID)
	if err != nil {
		return fmt.Errorf("record of %s: %w", p.rep.ID, err)
	}
	f, err := reg.Findings(p.rep.ID)
	if err != nil {
		return err
	}
	p.rep.Verification = f.Checks
	if rec.CgroupsPath != "" {
		p.cgroupsPath = rec.CgroupsPath
	}
	grp, err := cgroups.ForPID(rec.InitPid)
	if err != nil {
		return fmt.Errorf("cgroup of the probe's container: %w", err)
	}
	var limits *cgroups.Limits
	if l, err := grp.Limits(); err == nil {
		limits = &l
	}

	lines := make(chan string)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
				return
			}
		}
	}()

	start := exec.CommandContext(ctx, p.opt.Bulkhead, p.bulkheadArgv("start", p.rep.ID)[1:]...)
	if out, err := start.CombinedOutput(); err != nil {
		return fmt.Errorf("start: %v: %s", err, bytes.TrimSpace(out))
	}
	var stopCPU func()
	if p.gvisor {
		stopCPU = func() { go p.stopCPU(ctx) }
	}
	out := probe.Read(ctx, lines, grp.Events, p.gvisor, afterDoneWait, stopCPU)
	p.rep.Finished = out.Finished
	p.rep.Controls = probe.Judge(out, probe.Host{Limits: limits, GVisor: p.gvisor, HostFolderUnchanged: p.bundle.HostFolderUnchanged()})
	p.rep.Pass = p.rep.Finished && len(p.rep.Failed()) == 0 && len(p.rep.Skipped()) == 0
	if err := ctx.Err(); err != nil && !p.rep.Finished {
		return fmt.Errorf("probe: %w before the done line", err)
	}
	return nil
}

// stopCPU tells the probe under gVisor that the container's cpu.stat has
// shown the quota biting: SIGUSR1 through bulkhead's kill, which reaches
// the probe inside the sandbox. A word that does not arrive leaves the
// spin to its deadline, and the host's counters still decide.
func (p *probeRun) stopCPU(ctx context.Context) {
	kill := exec.CommandContext(ctx, p.opt.Bulkhead, p.bulkheadArgv("kill", p.rep.ID, "USR1")[1:]...)
	if out, err := kill.CombinedOutput(); err != nil {
		logrus.Warnf("bulkhead: probe: telling the cpu attempt to stop: %v: %s", err, bytes.TrimSpace(out))
	}
}

// cleanup deletes the container through bulkhead, then makes sure nothing
// is left: no record, no cgroup, no bundle or workspace.
func (p *probeRun) cleanup() error {
	var errs []error
	if p.created {
		ctx, cancel := context.WithTimeout(context.Background(), backend.Timeout)
		defer cancel()
		del := exec.CommandContext(ctx, p.opt.Bulkhead, p.bulkheadArgv("delete", "--force", p.rep.ID)[1:]...)
		if out, err := del.CombinedOutput(); err != nil {
			logrus.Debugf("bulkhead: probe: delete %s: %v: %s", p.rep.ID, err, out)
		}
		if reg, err := state.OpenRegistry(p.g.Root); err == nil {
			if _, err := reg.Get(p.rep.ID); err == nil {
				errs = append(errs, reg.Remove(p.rep.ID))
			}
		}
		// delete kept what the probe wrote to its workspace, as for
		// any job's; the probe's own write is nobody's to review.
		if cfg, err := p.g.LoadConfig(); err == nil {
			errs = append(errs, workspace.Discard(cfg.changes(), p.g.Root, p.rep.ID))
		}
		if p.cgroupsPath != "" && cgroups.Exists(p.cgroupsPath) {
			errs = append(errs, cgroups.Remove(p.cgroupsPath))
			if cgroups.Exists(p.cgroupsPath) {
				errs = append(errs, fmt.Errorf("cgroup %s is still there", p.cgroupsPath))
			}
		}
	}
	if err := os.RemoveAll(p.work); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
