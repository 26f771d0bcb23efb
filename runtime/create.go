package runtime

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/verify"
	"bulkhead.dev/bulkhead/runtime/workspace"
	"bulkhead.dev/bulkhead/specs"
)

// BackendError carries a backend's non-zero exit status, which bulkhead
// returns as its own so the engine sees what the backend said.
type BackendError struct {
	Verb   string
	Status int
	// Msg is the backend's own last error line of the --log file, when it
	// wrote one: the engine shows only the last line, bulkhead's.
	Msg string
}

func (e *BackendError) Error() string {
	if e.Msg != "" {
		return fmt.Sprintf("backend %s exited with status %d: %s", e.Verb, e.Status, e.Msg)
	}
	return fmt.Sprintf("backend %s exited with status %d", e.Verb, e.Status)
}

// creation is one container on its way from the caller's bundle to a
// verified backend container. Until commit, undo removes every trace.
type creation struct {
	g      *Globals
	cfg    *Config
	reg    *state.Registry
	rec    *state.Record
	sel    *Selection
	bundle string
	// bundleDir is the bundle opened once: what is read and judged
	// relative to the bundle is reached through it (runtime/bundle_dir.go).
	bundleDir *bundleDir
	pidFile   string // the backend's, in the state directory
	// stateDir is the state directory this create's record was added in,
	// open: a create stopped for a while can find it deleted (delete
	// --force) and made again by another create of the id, whose backend
	// writes its own pid file at the same path.
	stateDir *os.File
	// callerPidFile is the caller's --pid-file ("" for none); wrotePid
	// says bulkhead wrote it, and undo removes it.
	callerPidFile string
	wrotePid      bool

	original []byte // the caller's config.json, byte for byte
	handed   *rspec.Spec
	created  bool // the backend has a container of this id
	audit    audit.Entry
	ws       []workspace.Workspace // overlay workspaces (runtime/workspace)
	plan     *Plan

	// ctx is what the rules knew; the pins are judged with it again.
	ctx *specs.Context

	// lifetime is max_lifetime after the annotation; 0 for none.
	lifetime time.Duration

	// signals are those the create got (see listenWhileCreating).
	signals chan os.Signal
}

// prepare runs everything before the hand-over: load, select, rules,
// validation, record. On error nothing of the container exists.
func prepare(g *Globals, verb, id, bundle, pidFile string) (*creation, error) {
	if err := state.CheckID(id); err != nil {
		return nil, err
	}
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, err
	}
	if bundle == "" {
		if bundle, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	if bundle, err = filepath.Abs(bundle); err != nil {
		return nil, err
	}
	if pidFile != "" {
		if pidFile, err = filepath.Abs(pidFile); err != nil {
			return nil, err
		}
	}
	dir, err := openBundleDir(bundle)
	if err != nil {
		return nil, err
	}
	defer dir.close() // everything that reads the bundle runs before prepare returns
	bundle = dir.path
	spec, original, err := specs.LoadAt(bundle, dir.at("."))
	if err != nil {
		return nil, err
	}
	reg, err := state.OpenRegistry(g.Root)
	if err != nil {
		return nil, err
	}
	// Asked before the plan, whose cgroup rule would otherwise answer
	// first, about the running container's cgroup. Add asks again.
	if _, err := os.Lstat(reg.Dir(id)); err == nil {
		return nil, fmt.Errorf("container %s: %w", id, state.ErrExists)
	}
	plan, err := MakePlan(PlanInput{Config: cfg, Globals: g, Bundle: bundle, ID: id, Spec: spec, Original: original, Registry: reg,
		PidFile: pidFile, At: dir.at})
	if err != nil {
		return nil, err
	}
	sel := plan.Selection
	c := &creation{g: g, cfg: cfg, reg: reg, sel: sel, bundle: bundle, bundleDir: dir, pidFile: plan.PidFile, callerPidFile: plan.CallerPidFile,
		original: original, plan: plan, handed: plan.Handed, ws: plan.Workspaces, ctx: plan.Ctx,
		lifetime: plan.Lifetime}
	c.audit = audit.Entry{Event: verb, ID: id, Bundle: bundle, Profile: sel.Profile.Name,
		Backend: sel.Backend.Name, Mode: sel.Profile.Mode, SpecBefore: sha(original), Decisions: plan.Decisions}
	decisions := plan.Decisions
	for _, d := range decisions {
		logrus.Debugf("bulkhead: %s %s %s: %s", d.Rule, d.Field, d.Action, d.Why)
	}
	if err := plan.Refusal(); err != nil {
		return nil, c.fail(err)
	}
	for _, err := range plan.Warnings() {
		logrus.Warnf("bulkhead: audit mode, handed over anyway: %v", err)
	}
	if names := specs.RemovedEnv(plan.Decisions); len(names) > 0 {
		// A job that depends on one changes behaviour; it should not
		// take reading the audit log to learn why.
		logrus.Warnf("bulkhead: environment: %s removed: each name or value looks like a secret; pass secrets through a file the operator mounts, or set drop_secret_env = false in the profile",
			strings.Join(names, ", "))
	}
	c.audit.SpecAfter = sha(plan.RewrittenJSON)
	if sel.Profile.Mode == specs.Audit {
		c.audit.SpecAfter = c.audit.SpecBefore
	}

	c.rec = &state.Record{ID: id, Backend: sel.Backend.Name, BackendPath: sel.Backend.Path, Bundle: bundle,
		Profile: sel.Profile.Name, Mode: sel.Profile.Mode}
	c.rec.Created = nowUTC()
	c.rec.Pod = state.PodOfBundle(id, bundle, spec.Annotations)
	if c.handed.Linux != nil {
		c.rec.CgroupsPath = c.handed.Linux.CgroupsPath
		if sel.Profile.Mode == specs.Enforce {
			c.rec.Seccomp = verify.NarrowedSeccomp(&sel.Profile, c.handed.Linux.Seccomp)
		}
	}
	if err := reg.Add(c.rec); err != nil {
		return nil, c.fail(err)
	}
	if c.stateDir, err = os.Open(reg.Dir(id)); err != nil {
		return nil, c.fail(c.undo(err))
	}
	if err := reg.Owned(c.rec); err != nil {
		return nil, c.fail(c.undo(err))
	}
	if sel.Profile.Mode == specs.Enforce {
		if err := c.pinHostPaths(); err != nil {
			return nil, c.fail(c.undo(err))
		}
	}
	if err := c.mountWorkspaces(); err != nil {
		return nil, c.fail(c.undo(err))
	}
	if sel.Profile.Mode == specs.Enforce {
		// The caller's config.json is never written: a bundle is run again
		// (runc users do, and engines retry), and a rewritten one would
		// carry this run's workspace paths and the policy's values into
		// the next run as if the caller had asked for them. The backend
		// reads only bulkhead's own bundle.
		if err := c.writePrivateBundle(); err != nil {
			return nil, c.fail(c.undo(err))
		}
	}
	return c, nil
}

// handOver runs the backend's create (or restore) with the caller's flags,
// then verifies what the kernel applied. On any failure it undoes
// everything and returns the error.
func (c *creation) handOver(verb string, v Values) error {
	b := c.sel.Backend
	if err := c.plan.FlagRefusal(verb, v); err != nil {
		return c.fail(c.undo(err))
	}
	if err := backend.JudgeHanded(v.Int("preserve-fds")); err != nil {
		if c.sel.Profile.Mode == specs.Enforce {
			return c.fail(c.undo(err))
		}
		logrus.Warnf("bulkhead: audit mode, handed over anyway: %v", err)
	}
	if err := c.judgeStdioOwner(v.String("console-socket") != ""); err != nil {
		if c.sel.Profile.Mode == specs.Enforce {
			return c.fail(c.undo(err))
		}
		logrus.Warnf("bulkhead: audit mode, handed over anyway: %v", err)
	}
	if c.plan.PodSandbox != nil && b.IsGVisor() {
		if err := backend.JudgeMemberCaller(); err != nil {
			if c.sel.Profile.Mode == specs.Enforce {
				return c.fail(c.undo(fmt.Errorf("%s %s, a container of a gVisor pod: %w", verb, c.rec.ID, err)))
			}
			logrus.Warnf("bulkhead: audit mode, handed over anyway: %v", err)
		}
	}
	argv, dropped := c.plan.BackendArgv(verb, v)
	if len(dropped) > 0 {
		logrus.Warnf("bulkhead: backend %s does not support %s; not passed on", b.Name, strings.Join(dropped, " "))
	}
	logrus.Infof("bulkhead: %s %s with profile %s (%s) on %s", verb, c.rec.ID, c.sel.Profile.Name, c.sel.Profile.Mode, b.Path)
	if err := c.interrupted(verb); err != nil {
		return c.fail(c.undo(err))
	}
	logOffset := backend.LogSize(c.g.Log)
	release, err := c.claimCgroup()
	if err != nil {
		return c.fail(c.undo(err))
	}
	status, err := backend.Run(argv, v.Int("preserve-fds"))
	release()
	c.created = true // even a failed create may leave state behind
	if timedOut := (*backend.TimedOutError)(nil); errors.As(err, &timedOut) && b.Kind() == "runc" {
		err = fmt.Errorf("backend %s: %w; runc's init reads the image's /etc/passwd and /etc/group before the job runs, and one that is a FIFO or a device never answers: make them regular files", verb, err)
	}
	if err == nil && status != 0 {
		err = &BackendError{Verb: verb, Status: status, Msg: backend.LastError(c.g.Log, logOffset)}
	}
	if err != nil {
		return c.fail(c.undo(err))
	}
	pid, err := readOwnPidFile(c.stateDir, c.pidFile)
	if err != nil {
		return c.fail(c.undo(err))
	}
	c.rec.InitPid, c.rec.InitStart = pid, state.InitStart(pid)
	if !b.IsGVisor() {
		c.rec.InitExe = state.ExeID(pid)
	}
	var report verify.Report
	exp, err := verify.Expect(&c.sel.Profile, c.handed, b.Kind())
	if err == nil {
		// Under the systemd driver the group is the scope the rule
		// judged; a gVisor pod's containers run in its sandbox's
		// process and groups, not in groups of their own.
		if c.g.SystemdCgroup && c.handed.Linux != nil {
			exp.Cgroup, _ = specs.SystemdScopePath(c.handed.Linux.CgroupsPath)
		}
		if c.plan.PodSandbox != nil && b.IsGVisor() {
			exp.Cgroup = ""
		}
		if sb := c.plan.PodSandbox; sb != nil {
			exp.JoinedInit(sb.InitPid, func() bool { return state.StillRunning(sb) })
		}
		report, err = verify.Container(pid, exp)
	}
	c.audit.Checks = report
	if err == nil {
		err = report.Err()
	}
	if err != nil && c.sel.Profile.Mode == specs.Enforce {
		return c.fail(c.undo(fmt.Errorf("verification after %s: %w", verb, err)))
	}
	if err := c.reg.WriteFindings(c.rec, &state.Findings{Decisions: c.audit.Decisions, Checks: report}); err != nil {
		return c.fail(c.undo(err))
	}
	c.rec.StartsByFifo = startsByFifo(b, c.handed)
	if err := c.startBroker(); err != nil {
		return c.fail(c.undo(err))
	}
	if err := c.startWatchdog(); err != nil {
		return c.fail(c.undo(err))
	}
	if c.callerPidFile != "" {
		if err := writeCallerPidFile(c.callerPidFile, c.rec.InitPid); err != nil {
			return c.fail(c.undo(err))
		}
		c.wrotePid = true
	}
	if err := c.interrupted(verb); err != nil {
		return c.fail(c.undo(err))
	}
	// The record's init pid makes the container startable (Verified).
	if err := c.reg.Update(c.rec); err != nil {
		return c.fail(c.undo(err))
	}
	c.audit.Outcome = "created"
	if c.sel.Profile.Mode == specs.Audit {
		c.audit.Outcome = "created (audit mode: spec handed over unchanged)"
	}
	c.writeAudit()
	return nil
}

// judgeStdioOwner refuses stdio the backend would give to the uid the
// container's process runs as (the spec handed to the backend).
func (c *creation) judgeStdioOwner(consoleSocket bool) error {
	p := c.handed.Process
	if p == nil {
		return fmt.Errorf("the handed spec has no process")
	}
	ownTerminal := c.sel.Backend.OwnTerminal(p.Terminal, consoleSocket)
	if err := c.sel.Backend.JudgeStdioOwner(p.User.UID, ownTerminal); err != nil {
		return err
	}
	if c.sel.Backend.IsGVisor() && !ownTerminal {
		return backend.ShieldNullStdio()
	}
	return nil
}

// undo removes everything this creation made and returns cause, with any
// cleanup failure attached: a failed cleanup must be visible.
func (c *creation) undo(cause error) error {
	var errs []error
	if err := stopBroker(c.rec.BrokerPid, c.rec.ID); err != nil {
		errs = append(errs, err)
	}
	if err := c.reg.Owned(c.rec); errors.Is(err, state.ErrReplaced) {
		return c.undoDisowned(cause)
	}
	if c.created {
		_ = backend.Quietly(c.g.backendArgv(c.sel.Backend, "delete", "--force", c.rec.ID))
		if err := cgroups.Remove(c.rec.CgroupsPath); err != nil {
			errs = append(errs, err)
		} else {
			removedGroup(c.rec.CgroupsPath, c.rec.CgroupParents)
		}
	}
	os.Remove(c.pidFile)
	if c.wrotePid {
		removeCallerPidFile(c.callerPidFile, c.rec.InitPid)
	}
	if err := ignoreReplaced(c.reg.RemoveOwned(c.rec)); err != nil {
		errs = append(errs, err)
	}
	if err := stopWatchdog(c.rec.WatchdogPid, c.rec.ID); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w (cleanup: %v)", cause, errors.Join(errs...))
	}
	return cause
}

// undoDisowned is undo for a create whose record was deleted while it
// ran (delete --force of a create that was stopped, or slow): what is kept
// under the id (the state directory, the backend's container, the cgroup
// of that name) may be another create's by now, and is left to it. Only
// what is this create's beyond doubt goes: its container while its
// verified init still runs (the id cannot have been taken again then),
// and the caller's pid file it wrote.
func (c *creation) undoDisowned(cause error) error {
	var errs []error
	if c.created && state.StillRunning(c.rec) {
		_ = backend.Quietly(c.g.backendArgv(c.sel.Backend, "delete", "--force", c.rec.ID))
		if err := cgroups.Remove(c.rec.CgroupsPath); err != nil {
			errs = append(errs, err)
		}
	}
	if c.wrotePid {
		removeCallerPidFile(c.callerPidFile, c.rec.InitPid)
	}
	err := fmt.Errorf("%w; the container %s was deleted while its create ran, and nothing kept under its id now is this create's", cause, c.rec.ID)
	if len(errs) > 0 {
		return fmt.Errorf("%w (cleanup: %v)", err, errors.Join(errs...))
	}
	return err
}

// fail records a refused or failed creation in the audit log.
func (c *creation) fail(err error) error {
	c.audit.Outcome = "refused"
	var be *BackendError
	if errors.As(err, &be) {
		c.audit.Outcome = "failed"
	}
	c.audit.Error = err.Error()
	c.writeAudit()
	return err
}

func (c *creation) writeAudit() {
	if err := audit.Write(c.cfg.AuditLog, &c.audit); err != nil {
		logrus.Warnf("bulkhead: %v", err)
	}
}

func readPidFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("pid file: %w", err)
	}
	return parsePid(path, data)
}

// readOwnPidFile reads the backend's pid file of this create in the state
// directory dir it opened: gone with the directory it deleted, never
// another create's made at that path since.
func readOwnPidFile(dir *os.File, path string) (int, error) {
	fd, err := unix.Openat(int(dir.Fd()), filepath.Base(path), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("pid file %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return 0, fmt.Errorf("pid file: %w", err)
	}
	return parsePid(path, data)
}

func parsePid(path string, data []byte) (int, error) {
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: %q is not a pid", path, data)
	}
	return pid, nil
}

// Create is the create verb: policy, hand-over, verification.
func Create(g *Globals, v Values, id string) error {
	c, stop, err := listenWhileCreating(g, "create", id, v.String("bundle"), v.String("pid-file"))
	if err != nil {
		return err
	}
	defer stop()
	return c.handOver("create", v)
}

// Restore is the restore verb: the same policy and verification as create,
// since a checkpoint image carries a process but the boundary is the spec's.
func Restore(g *Globals, v Values, id string) error {
	if err := g.criuRefusal(); err != nil {
		return err
	}
	c, stop, err := listenWhileCreating(g, "restore", id, v.String("bundle"), v.String("pid-file"))
	if err != nil {
		return err
	}
	defer stop()
	return c.handOver("restore", v)
}

// mountWorkspaces mounts the planned overlays once the state directory
// exists.
func (c *creation) mountWorkspaces() error {
	return workspace.Mount(c.ws, &c.sel.Profile, c.reg.Dir(c.rec.ID))
}
