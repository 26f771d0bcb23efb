package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

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
	reg    *Registry
	rec    *Record
	sel    *Selection
	bundle string
	// bundleDir is the bundle opened once: what is read and judged
	// relative to the bundle is reached through it (runtime/bundle_dir.go).
	bundleDir *bundleDir
	pidFile   string
	ownPid    bool // bulkhead chose the pid file and removes it on failure

	original   []byte // the caller's config.json, byte for byte
	handed     *rspec.Spec
	handedJSON []byte
	created    bool // the backend has a container of this id
	audit      AuditEntry
	ws         []workspace // overlay workspaces (runtime/workspace.go)

	// ctx is what the rules knew; the pins are judged with it again.
	ctx *specs.Context
	// handOverBundle is the bundle the backend gets: bulkhead's own in
	// enforce mode (runtime/pins.go), the caller's in audit mode.
	handOverBundle string

	// lifetime is max_lifetime after the annotation; 0 for none.
	lifetime time.Duration
}

// bundlePath is a path that reaches name, relative to the opened bundle
// when it is relative, as runc resolves it.
func (c *creation) bundlePath(name string) string { return c.bundleDir.at(name) }

// prepare runs everything before the hand-over: load, select, rules,
// validation, record. On error nothing of the container exists.
func prepare(g *Globals, verb, id, bundle, pidFile string) (*creation, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	cfg, err := LoadConfig(g.Config, g.explicit)
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
	dir, err := openBundleDir(bundle)
	if err != nil {
		return nil, err
	}
	defer dir.close() // everything that reads the bundle runs before prepare returns
	spec, original, err := specs.LoadAt(bundle, dir.at("."))
	if err != nil {
		return nil, err
	}
	sel, err := Select(cfg, g, spec.Annotations)
	if err != nil {
		return nil, err
	}
	reg, err := OpenRegistry(g.Root)
	if err != nil {
		return nil, err
	}
	c := &creation{g: g, cfg: cfg, reg: reg, sel: sel, bundle: bundle, bundleDir: dir, pidFile: pidFile, original: original}
	c.audit = AuditEntry{Event: verb, ID: id, Bundle: bundle, Profile: sel.Profile.Name,
		Backend: sel.Backend.Name, Mode: sel.Profile.Mode, SpecBefore: sha(original)}

	ctx := specContext(g, &sel.Profile, bundle, reg, original, id, spec.Annotations)
	c.ctx, c.handOverBundle = ctx, bundle
	rewritten, decisions, err := specs.Apply(ctx, spec)
	decisions, err = c.decideLifetime(spec.Annotations, decisions, err)
	c.audit.Decisions = decisions
	if err != nil && sel.Profile.Mode == specs.Enforce {
		return nil, c.fail(err)
	}
	for _, d := range decisions {
		logrus.Debugf("bulkhead: %s %s %s: %s", d.Rule, d.Field, d.Action, d.Why)
	}
	c.handed = spec
	if sel.Profile.Mode == specs.Enforce {
		c.handed = rewritten
		chooseCgroupsPath(c.handed, g, id)
		if err := c.freshCgroup(); err != nil {
			return nil, c.fail(err)
		}
		if sel.Backend.IsGVisor() {
			translateForGVisor(c.handed, &sel.Profile)
		}
	}
	backendErr, invErr := gateHanded(ctx, id, bundle, c.handed, g, sel.Backend.IsGVisor())
	if invErr != nil {
		invErr = fmt.Errorf("the spec handed over breaks the profile's invariants: %w", invErr)
	}
	for _, err := range []error{backendErr, invErr} {
		if err == nil {
			continue
		}
		if sel.Profile.Mode == specs.Enforce {
			return nil, c.fail(err)
		}
		// Audit mode promises the backend's own behaviour: our copy of
		// runc's validator may be newer than the installed runc.
		logrus.Warnf("bulkhead: audit mode, handed over anyway: %v", err)
	}
	if err := c.planWorkspaces(); err != nil {
		return nil, c.fail(err)
	}
	if c.handedJSON, err = specs.Marshal(c.handed); err != nil {
		return nil, c.fail(err)
	}
	c.audit.SpecAfter = sha(c.handedJSON)
	if sel.Profile.Mode == specs.Audit {
		c.audit.SpecAfter = c.audit.SpecBefore
	}

	c.rec = &Record{ID: id, Backend: sel.Backend.Name, BackendPath: sel.Backend.Path, Bundle: bundle,
		Profile: sel.Profile.Name, Mode: sel.Profile.Mode, Decisions: decisions}
	c.rec.Created = nowUTC()
	if a := spec.Annotations; a[specs.AnnotationCRIContainerType] == "sandbox" && a[specs.AnnotationCRISandboxID] == id {
		c.rec.Pod = podOf(a)
	}
	if c.handed.Linux != nil {
		c.rec.CgroupsPath = c.handed.Linux.CgroupsPath
		if sel.Profile.Mode == specs.Enforce {
			c.rec.Seccomp = narrowedSeccomp(&sel.Profile, c.handed.Linux.Seccomp)
		}
	}
	if err := reg.Add(c.rec); err != nil {
		return nil, c.fail(err)
	}
	if c.pidFile == "" {
		c.pidFile, c.ownPid = filepath.Join(reg.Dir(id), "init.pid"), true
	}
	if err := os.WriteFile(filepath.Join(reg.Dir(id), "config.orig.json"), original, 0o600); err != nil {
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
		if c.handOverBundle, err = c.writePrivateBundle(); err != nil {
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
	flags, dropped := ForwardFlags(verb, v, b.IsGVisor(), "bundle", "pid-file")
	if len(dropped) > 0 {
		logrus.Warnf("bulkhead: backend %s does not support %s; not passed on", b.Name, strings.Join(dropped, " "))
	}
	args := append([]string{"--bundle", c.handOverBundle, "--pid-file", c.pidFile}, flags...)
	args = append(args, c.rec.ID)
	argv := c.g.backendArgv(b, verb, args...)
	logrus.Infof("bulkhead: %s %s with profile %s (%s) on %s", verb, c.rec.ID, c.sel.Profile.Name, c.sel.Profile.Mode, b.Path)
	logOffset := logSize(c.g.Log)
	release, err := c.claimCgroup()
	if err != nil {
		return c.fail(c.undo(err))
	}
	status, err := runBackend(argv, v.Int("preserve-fds"))
	release()
	c.created = true // even a failed create may leave state behind
	if err == nil && status != 0 {
		err = &BackendError{Verb: verb, Status: status, Msg: lastBackendError(c.g.Log, logOffset)}
	}
	if err != nil {
		return c.fail(c.undo(err))
	}
	pid, err := readPidFile(c.pidFile)
	if err != nil {
		return c.fail(c.undo(err))
	}
	c.rec.InitPid, c.rec.InitStart = pid, initStart(pid)
	var report Report
	exp, err := Expect(&c.sel.Profile, c.handed, b.Kind())
	if err == nil {
		report, err = Verify(pid, exp)
	}
	c.rec.Checks = report
	c.audit.Checks = report
	if err == nil {
		err = report.Err()
	}
	if err != nil && c.sel.Profile.Mode == specs.Enforce {
		return c.fail(c.undo(fmt.Errorf("verification after %s: %w", verb, err)))
	}
	if err := c.startWatchdog(); err != nil {
		return c.fail(c.undo(err))
	}
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

// undo removes everything this creation made and returns cause, with any
// cleanup failure attached: a failed cleanup must be visible.
func (c *creation) undo(cause error) error {
	var errs []error
	if c.created {
		_ = quietly(c.g.backendArgv(c.sel.Backend, "delete", "--force", c.rec.ID))
		if err := removeCgroup(c.rec.CgroupsPath); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ownPid {
		os.Remove(c.pidFile)
	}
	if err := c.reg.Remove(c.rec.ID); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w (cleanup: %v)", cause, errors.Join(errs...))
	}
	return cause
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
	if err := WriteAudit(c.cfg.AuditLog, &c.audit); err != nil {
		logrus.Warnf("bulkhead: %v", err)
	}
}

func readPidFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: %q is not a pid", path, data)
	}
	return pid, nil
}

// Create is the create verb: policy, hand-over, verification.
func Create(g *Globals, v Values, id string) error {
	c, err := prepare(g, "create", id, v.String("bundle"), v.String("pid-file"))
	if err != nil {
		return err
	}
	return c.handOver("create", v)
}

// Restore is the restore verb: the same policy and verification as create,
// since a checkpoint image carries a process but the boundary is the spec's.
func Restore(g *Globals, v Values, id string) error {
	c, err := prepare(g, "restore", id, v.String("bundle"), v.String("pid-file"))
	if err != nil {
		return err
	}
	return c.handOver("restore", v)
}
