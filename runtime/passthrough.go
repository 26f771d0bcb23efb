package runtime

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// owner returns the backend that owns id: the one recorded at create, or,
// for a container bulkhead has no record of, the backend the runtime entry
// selects (so `state` of an unknown id gets the backend's own answer). The
// record is returned as read, nil for none: a verb that needs it too reads
// and decodes it once.
func owner(g *Globals, id string) (*backend.Backend, *state.Registry, *state.Record, error) {
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	b, reg, snap, err := ownerIn(cfg, g, id)
	if err != nil {
		return nil, nil, nil, err
	}
	defer snap.Close()
	if snap == nil {
		return b, reg, nil, nil
	}
	return b, reg, snap.Record, nil
}

// ownerIn is owner with the configuration already loaded: a verb that
// needs it again (delete's audit line) decodes it once. The record comes
// as a snapshot (nil for none) the caller closes, so that delete can tell
// after the backend's delete whether the record changed meanwhile.
func ownerIn(cfg *Config, g *Globals, id string) (*backend.Backend, *state.Registry, *state.Snapshot, error) {
	reg, err := state.OpenRegistry(g.Root)
	if err != nil {
		return nil, nil, nil, err
	}
	if state.CheckID(id) == nil {
		snap, err := reg.Snapshot(id)
		if err == nil {
			b, err := cfg.ResolveBackend(snap.Record.Backend)
			if err != nil {
				snap.Close()
				return nil, nil, nil, err
			}
			return b, reg, snap, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, nil, nil, err
		}
	}
	sel, err := Select(cfg, g, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return sel.Backend, reg, nil, nil
}

// Passthrough replaces bulkhead with the owning backend for verbs whose
// whole effect is the backend's: pid, stdio, console socket, preserved fds,
// signals and exit status are then the backend's own.
// A flag that loosens the boundary on that backend is refused for a
// container of an enforce-mode profile, as at create.
func Passthrough(g *Globals, verb string, v Values, args []string) error {
	b, rec, err := ownerOfArgs(g, args)
	if err != nil {
		return err
	}
	if rec != nil && rec.Mode == specs.Enforce {
		if weak := WeakeningFlags(verb, v, b.IsGVisor()); len(weak) > 0 {
			return fmt.Errorf("profile %s refuses %s", rec.Profile, strings.Join(weak, "; "))
		}
	}
	if rec != nil {
		if err := refusePauseUnstarted(g, b, verb, rec); err != nil {
			return err
		}
	}
	return passthroughTo(g, b, verb, v, args)
}

// ownerOfArgs is owner of the container a handed-on verb's arguments name
// first: its backend and its record (nil for none).
func ownerOfArgs(g *Globals, args []string) (*backend.Backend, *state.Record, error) {
	id := ""
	if len(args) > 0 {
		id = args[0]
	}
	b, _, rec, err := owner(g, id)
	return b, rec, err
}

// passthroughTo is Passthrough to a backend the caller already resolved
// from the container's record.
func passthroughTo(g *Globals, b *backend.Backend, verb string, v Values, args []string) error {
	if err := g.criuRefusal(); err != nil {
		return err
	}
	flags, dropped := ForwardFlags(verb, v, b.IsGVisor())
	if len(dropped) > 0 {
		logrus.Warnf("bulkhead: backend %s does not support %s; not passed on", b.Name, strings.Join(dropped, " "))
	}
	if verb == "checkpoint" {
		// The image is the job's memory, whatever secrets it held: runsc
		// wrote it 0644 under the caller's umask. Only root reads it.
		syscall.Umask(0o077)
	}
	return execBackend(g.backendArgv(b, verb, append(flags, positional(args)...)...))
}

// positional hands the backend args as bulkhead read them: arguments, never
// flags. bulkhead's parser took its flags and one "--" away; a second "--"
// or an argument that begins with '-' would otherwise be read as the
// backend's own.
func positional(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	return append([]string{"--"}, args...)
}

func execBackend(argv []string) error {
	logrus.Debugf("bulkhead: exec %v", argv)
	err := syscall.Exec(argv[0], argv, os.Environ())
	return fmt.Errorf("exec %s: %w", argv[0], err)
}

// Delete deletes the container through its backend and then every trace
// bulkhead kept of it. A record whose container the backend no longer
// knows is removed too, so a crashed create cannot leave a stale record.
// Whatever cannot be removed fails the delete (the engine then keeps the
// container and may delete it again), and the audit line names it.
func Delete(g *Globals, v Values, id string) error {
	cfg, err := g.LoadConfig()
	if err != nil {
		return err
	}
	b, reg, snap, err := ownerIn(cfg, g, id)
	if err != nil {
		return err
	}
	defer snap.Close()
	if err := state.CheckID(id); err != nil {
		return err
	}
	status := 0
	handled, err := deleteStopped(g, b, id)
	if !handled {
		flags, _ := ForwardFlags("delete", v, b.IsGVisor())
		status, err = backend.Run(g.backendArgv(b, "delete", append(flags, id)...), 0)
	}
	if err != nil {
		return err
	}
	// The record as it is after the backend's delete: the one read above
	// unless it was written since, and only while it is still that
	// container's. A delete stopped for a while can find that record
	// deleted and the id taken by a newer create, whose record, broker,
	// cgroup and workspace are not this delete's: removed, they ended the
	// newer container's max_lifetime watchdog with it running.
	own := &state.Record{ID: id}
	var rec *state.Record
	recErr := fmt.Errorf("container %s: %w", id, os.ErrNotExist)
	if snap != nil {
		own = snap.Record
		rec, recErr = snap.Current()
	} else if _, err := reg.Get(id); err == nil {
		recErr = fmt.Errorf("container %s: %w", id, state.ErrReplaced)
	}
	if errors.Is(recErr, state.ErrReplaced) {
		if status != 0 {
			return &BackendError{Verb: "delete", Status: status}
		}
		logrus.Warnf("bulkhead: delete %s: the record under this id is a newer create's now; left alone", id)
		return nil
	}
	if status != 0 {
		if recErr != nil || backendKnows(g, b, id) {
			return &BackendError{Verb: "delete", Status: status}
		}
		logrus.Warnf("bulkhead: %s: backend %s has no such container; removing bulkhead's record", id, b.Name)
	}
	if recErr != nil {
		return ignoreReplaced(reg.RemoveOwned(own))
	}
	entry := audit.Entry{Event: "delete", ID: id, Bundle: rec.Bundle, Profile: rec.Profile, Backend: rec.Backend, Mode: rec.Mode}
	var errs []error
	if err := stopBroker(rec.BrokerPid, id); err != nil {
		errs = append(errs, err)
	}
	if err := cgroups.Remove(rec.CgroupsPath); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		// Something of the container still runs (a backend create a
		// killed create left behind finishes a sandbox later): the
		// record stays, so that a delete again finds it and asks the
		// backend again, and its workspace is kept only once nothing
		// can write to it.
		err := errors.Join(errs...)
		entry.Outcome, entry.Error = "delete failed", err.Error()+"; the record is kept for a delete again"
		writeAudit(cfg, &entry)
		return err
	}
	removedGroup(rec.CgroupsPath, rec.CgroupParents)
	// Workspace changes outlive the container; failing to keep them is
	// recorded, never a reason to keep the container.
	kept, keepErr := keepChanges(g, reg, rec)
	if kept != nil {
		entry.Changes, entry.ChangesTill = kept.Dir, &kept.Expires
	}
	if err := ignoreReplaced(reg.RemoveOwned(rec)); err != nil {
		errs = append(errs, err)
	}
	// Once the record is gone: the watchdog keeps a kept record's
	// deadline, and its kill under way ends on that evidence.
	if err := stopWatchdog(rec.WatchdogPid, id); err != nil {
		errs = append(errs, err)
	}
	err = errors.Join(errs...)
	entry.Outcome = "deleted"
	var problems []string
	if err != nil {
		entry.Outcome = "delete failed"
		problems = append(problems, err.Error())
	}
	if keepErr != nil {
		logrus.Warnf("bulkhead: changes of %s not kept: %v", id, keepErr)
		problems = append(problems, "workspace changes not kept: "+keepErr.Error())
	}
	entry.Error = strings.Join(problems, "; ")
	writeAudit(cfg, &entry)
	return err
}

// ignoreReplaced is err, but for a record a newer create made under the
// id meanwhile, which is left to it.
func ignoreReplaced(err error) error {
	if errors.Is(err, state.ErrReplaced) {
		return nil
	}
	return err
}

// writeAudit appends e to the configured audit log; failing to audit is
// logged, not fatal.
func writeAudit(cfg *Config, e *audit.Entry) {
	if err := audit.Write(cfg.AuditLog, e); err != nil {
		logrus.Warnf("bulkhead: audit: %v", err)
	}
}

// backendKnows tells whether the backend still has state for id.
func backendKnows(g *Globals, b *backend.Backend, id string) bool {
	_, err := backend.Output(g.backendArgv(b, "state", id))
	return err == nil
}
