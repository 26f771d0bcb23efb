package runtime

import (
	"errors"
	"fmt"
	"os"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/verify"
	"bulkhead.dev/bulkhead/specs"
)

// gvisorFilterDeadline bounds the wait for gVisor's sandbox to install its
// own seccomp filter once the workload starts.
const gvisorFilterDeadline = 10 * time.Second

// Start starts a created container. For runc it is bulkhead releasing
// the init as runc would (start_fifo.go), or else the backend's own
// start. gVisor's sandbox, the one host process that runs the workload's
// system calls, installs its own seccomp filter and
// no_new_privs only when the workload starts, so create cannot see them:
// bulkhead runs runsc's start as a child and then verifies the sandbox
// process; a sandbox without them is killed and start fails naming the
// control.
func Start(g *Globals, v Values, id string) error {
	c, err := lookupRecorded(g, "start", id)
	if errors.Is(err, os.ErrNotExist) {
		return startUnrecorded(g, v, id)
	}
	if errors.As(err, new(unverified)) {
		return err
	}
	if err != nil {
		// A record bulkhead cannot read or judge (its profile gone, the
		// configuration broken) could be a gVisor sandbox that must be
		// verified once started: nothing starts on it.
		return fmt.Errorf("%w; fix the configuration, or delete the container and create it again", err)
	}
	// Only the init create verified is ever started. One that is gone
	// leaves no container bulkhead checked under this id: whatever the
	// backend holds there now (a later create of the same id, killed
	// before its own verification, after a create stopped past its own
	// was resumed and recorded its init) would start unverified.
	if !state.StillRunning(c.rec) {
		return fmt.Errorf("cannot start a container that has stopped: the init bulkhead verified at create (pid %d) has ended", c.rec.InitPid)
	}
	if c.backend.IsGVisor() {
		handed, _, err := specs.Load(c.handedBundle())
		if err != nil {
			return err
		}
		if err := judgeMemberStdio(c, handed); err != nil {
			return err
		}
		if c.profile.Mode == specs.Enforce {
			return startGVisor(g, c, handed, id)
		}
	}
	if handled, err := startByFifo(g, c.backend, c.rec, id); handled {
		return err
	}
	return passthroughTo(g, c.backend, "start", v, []string{id})
}

// startGVisor runs runsc's start and then verifies the sandbox's own
// filter and no_new_privs, which it installs only now.
func startGVisor(g *Globals, c *recorded, handed *rspec.Spec, id string) error {
	status, err := backend.Run(g.backendArgv(c.backend, "start", id), 0)
	if err == nil && status != 0 {
		err = &BackendError{Verb: "start", Status: status}
	}
	if err != nil {
		return endUnstarted(g, c, handed, id, err)
	}
	if err := startedOwn(g, c.backend, c.rec, id); err != nil {
		return err
	}
	if err := verifyGVisorStarted(g, c.backend, id, c.rec.InitPid); err != nil {
		return err
	}
	if c.rec.BrokerPid != 0 {
		return startEgressForwarder(g, c.backend, &c.profile, id)
	}
	return nil
}

// startedOwn makes sure that what the backend's start, which acts by id,
// started is the container create verified. A start stopped before its
// backend acted can go on after that container was deleted and the id
// taken by another create, which nothing verified: the verified init is
// gone then, and the backend runs another under the id, which is killed.
// A verified init that ended by itself leaves nothing running.
func startedOwn(g *Globals, b *backend.Backend, rec *state.Record, id string) error {
	if state.StillRunning(rec) {
		return nil
	}
	st, err := askBackendState(g, b, id)
	if errors.Is(err, errNoBackendState) {
		return nil // the backend has nothing under the id
	}
	if err == nil && (st.Status == "stopped" || st.Pid == rec.InitPid) {
		return nil
	}
	if kerr := backend.Quietly(g.backendArgv(b, "kill", "--all", id, "KILL")); kerr != nil {
		logrus.Errorf("bulkhead: start %s: kill: %v", id, kerr)
	}
	killed := "it was killed"
	if !stoppedWithin(g, b, id, killWait) {
		killed = fmt.Sprintf("it was sent SIGKILL and still ran %s later", killWait)
	}
	return fmt.Errorf("start %s: the init create verified (pid %d) has ended, and the backend started another container under this id (%s, pid %d), not the one verified; %s: delete it (bulkhead delete --force %s)",
		id, rec.InitPid, st.Status, st.Pid, killed, id)
}

// endUnstarted ends the gVisor sandbox of a container whose start failed
// (its command a script with no #! line, an interpreter missing): runsc
// refuses to signal a container it still calls created, so the sandbox
// ran on, and dockerd 20.10, whose delete of a created task is refused,
// forgot it with its shim, cgroups and bulkhead's mounts. Once the
// sandbox has ended the engine sees the task stop and deletes it, which
// removes the rest. Only a container runsc still holds as created, under
// the init create verified, is ended: a start that failed because the
// container already runs (a second start, of a pod's sandbox too) leaves
// it running; a pod member's sandbox is its pod's and is left too.
func endUnstarted(g *Globals, c *recorded, handed *rspec.Spec, id string, cause error) error {
	if handed.Annotations[specs.AnnotationCRIContainerType] == "container" {
		return cause
	}
	if st, err := askBackendState(g, c.backend, id); err != nil || st.Status != "created" || st.Pid != c.rec.InitPid {
		return cause
	}
	pid := c.rec.InitPid
	p, err := holdProcess(pid)
	if errors.Is(err, errGone) {
		return cause
	}
	if err != nil {
		return fmt.Errorf("%w; its gVisor sandbox %d is left running: %v", cause, pid, err)
	}
	defer p.release()
	// Judged with the pidfd held: the pid cannot be another's meanwhile.
	if !state.StillRunning(c.rec) {
		return cause
	}
	if err := p.kill(); err != nil {
		return fmt.Errorf("%w; its gVisor sandbox %d is left running: %v", cause, pid, err)
	}
	if !p.exited(killWait) {
		return fmt.Errorf("%w; its gVisor sandbox %d was sent SIGKILL and still ran %s later", cause, pid, killWait)
	}
	return fmt.Errorf("%w; its gVisor sandbox %d was killed: delete removes the container", cause, pid)
}

// killWait bounds how long a start that killed what it must not have
// started waits for the backend to see it stopped: runsc ends the sandbox
// a while after its processes, longer on a busy machine, and the caller
// told "killed" may look at once.
const killWait = 10 * time.Second

// stoppedWithin polls the backend's state of id until it is stopped or
// gone, for at most d.
func stoppedWithin(g *Globals, b *backend.Backend, id string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		st, err := askBackendState(g, b, id)
		if errors.Is(err, errNoBackendState) || err == nil && st.Status == "stopped" {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// judgeMemberStdio judges the stdio a start hands a pod member on runsc.
// runsc creates a container that joins a pod's sandbox only at start,
// with start's own stdio, which the sandbox gives to the container's
// user for good as runc's init gives create's: so they are judged as
// create judges its own (judgeStdioOwner), and the host's /dev/null is
// shielded. Engines start with /dev/null on every descriptor.
func judgeMemberStdio(c *recorded, handed *rspec.Spec) error {
	if handed.Annotations[specs.AnnotationCRIContainerType] != "container" {
		return nil // a sandbox of its own: its stdio was handed at create
	}
	p := handed.Process
	if p == nil {
		return fmt.Errorf("start %s: the handed spec has no process", c.rec.ID)
	}
	judge := backend.JudgeHanded(0)
	if judge == nil {
		// start takes no console socket: the caller's stdio is judged
		// whatever the spec's terminal says.
		judge = c.backend.JudgeStdioOwner(p.User.UID, false)
	}
	if judge == nil {
		judge = backend.JudgeMemberCapture()
	}
	if judge != nil {
		if c.profile.Mode == specs.Enforce {
			return fmt.Errorf("start %s, a container of a gVisor pod: %w", c.rec.ID, judge)
		}
		logrus.Warnf("bulkhead: audit mode, handed over anyway: %v", judge)
	}
	return backend.ShieldNullStdio()
}

// verifyGVisorStarted waits for the sandbox process to hold a seccomp
// filter and no_new_privs, and kills the container when it does not.
func verifyGVisorStarted(g *Globals, b *backend.Backend, id string, pid int) error {
	var st verify.ProcStatus
	var err error
	deadline := time.Now().Add(gvisorFilterDeadline)
	for {
		st, err = verify.ReadProcStatus(pid)
		if err != nil || leaderExiting(pid) {
			// A short job's sandbox may end before it is read: nothing of
			// it runs any more, and what it ran cannot be verified; the
			// --log file says so, and the container's exit is the
			// engine's. Not on stderr: gVisor writes the container's
			// stderr at offsets of its own, so a line of bulkhead's after
			// it would overwrite it in a regular file.
			logrus.Infof("bulkhead: start %s: the gVisor sandbox %d ended before it could be verified", id, pid)
			return nil
		}
		if st["Seccomp"] == "2" && st["NoNewPrivs"] == "1" {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	control, want, got := "seccomp", "Seccomp 2", "Seccomp "+st["Seccomp"]
	if st["Seccomp"] == "2" {
		control, want, got = "no_new_privs", "NoNewPrivs 1", "NoNewPrivs "+st["NoNewPrivs"]
	}
	if kerr := backend.Quietly(g.backendArgv(b, "kill", "--all", id, "KILL")); kerr != nil {
		logrus.Errorf("bulkhead: start %s: kill after failed verification: %v", id, kerr)
	}
	return fmt.Errorf("verification after start: control %s: expected %s of the gVisor sandbox %d, kernel applied %s after %s; the container was killed",
		control, want, pid, got, gvisorFilterDeadline)
}

// startUnrecorded is start of an id bulkhead has no record of. Under
// bulkhead's root only a bulkhead create makes backend containers, so one
// the backend holds without a record is a create that never got as far
// as verification and lost its record: its create was killed and an
// engine's delete removed the record while the backend's create was
// still running, or create's undo could not delete the backend's
// container. Nothing of it was verified, and no watchdog bounds it: it is
// refused. An id the backend does not hold either gets the backend's own
// answer.
func startUnrecorded(g *Globals, v Values, id string) error {
	b, _, _, err := owner(g, id)
	if err != nil {
		return err
	}
	if backendKnows(g, b, id) {
		return fmt.Errorf("start %s: backend %s holds this container but bulkhead has no record of it (its create did not finish), so nothing of it was verified; delete it (bulkhead delete --force %s) and create it again", id, b.Name, id)
	}
	return passthroughTo(g, b, "start", v, []string{id})
}
