package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
)

// Kill is the kill verb. runc refuses a signal for a container it calls
// stopped, which it does once the init is gone or its leader a zombie.
// Processes of the container can still run then: the other threads of an
// init that ended its main thread with exit(2), or what an init forked in
// a pid namespace it joined (a pod's), which the init's end does not end.
// An engine's stop would report success and leave them working. Such a
// container's signal goes to every process of it (runc's kill --all).
func Kill(g *Globals, v Values, args []string) error {
	id := ""
	if len(args) > 0 {
		id = args[0]
	}
	b, reg, rec, err := owner(g, id)
	if err != nil {
		return err
	}
	if rec != nil && b.IsGVisor() {
		// runsc answers a signal for a sandbox that has ended with
		// "sandbox is not running", which no engine takes for the end:
		// containerd's shim stopped such a pod again and again, for
		// ever. runc's words for it are what engines know.
		report, err := askBackendState(g, b, id)
		if err == nil && report.Status == "stopped" {
			return fmt.Errorf("kill %s: container not running", id)
		}
		if err == nil && report.Status == "created" {
			if ended, err := endUnstartedSandbox(reg, rec); err != nil || ended {
				return err
			}
		}
	}
	if rec != nil && !v.Bool("all") && outlivesInit(g, b, rec, id) {
		logrus.Warnf("bulkhead: kill %s: the init has ended but processes of the container run; signalling every one", id)
		return execBackend(g.backendArgv(b, "kill", append([]string{"--all"}, positional(args)...)...))
	}
	return passthroughTo(g, b, "kill", v, args)
}

// endUnstartedSandbox ends a gVisor container created and never started
// whose sandbox is its own (no other container's record names the same
// sandbox process, as a pod's members do). runsc refuses every signal for
// it ("cannot signal container in state created") where runc ends a
// created container's init, so a client that gave up on a container
// before its start (containerd's Kill and Delete of a created task)
// could neither kill nor delete it, and its sandbox ran for ever. There
// is no workload to stop gently: the sandbox is killed, and runsc then
// reports the container stopped. ended is false where it is not such a
// container.
func endUnstartedSandbox(reg *state.Registry, rec *state.Record) (ended bool, err error) {
	if !state.StillRunning(rec) {
		return false, nil
	}
	ids, err := reg.IDs()
	if err != nil {
		return false, err
	}
	for _, other := range ids {
		if o, err := reg.Get(other); other != rec.ID && err == nil && o.InitPid == rec.InitPid && o.InitStart == rec.InitStart {
			return false, nil
		}
	}
	p, err := holdProcess(rec.InitPid)
	if errors.Is(err, errGone) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer p.release()
	// The pid held is the sandbox's only while it still started when the
	// sandbox did.
	if !state.StillRunning(rec) {
		return true, nil
	}
	if err := p.kill(); err != nil {
		return false, fmt.Errorf("kill %s: end its sandbox %d: %w", rec.ID, rec.InitPid, err)
	}
	p.exited(5 * time.Second)
	return true, nil
}

// signalInit is Kill's choice for bulkhead's own forwarding of a signal
// to a container's init (run).
func signalInit(g *Globals, b *backend.Backend, rec *state.Record, id, sig string) error {
	args := []string{id, sig}
	if outlivesInit(g, b, rec, id) {
		args = append([]string{"--all"}, args...)
	}
	return backend.Quietly(g.backendArgv(b, "kill", args...))
}

// outlivesInit tells whether a runc container's verified init no longer
// runs while the backend still lists processes of the container. runsc's
// sandbox is the recorded pid there, and gVisor judges its own processes.
func outlivesInit(g *Globals, b *backend.Backend, rec *state.Record, id string) bool {
	if b.Kind() != "runc" || rec.InitPid <= 1 || state.StillRunning(rec) {
		return false
	}
	n, err := backend.CountProcesses(g.backendArgv(b, "ps", "--format", "json", id))
	return err == nil && n > 0
}
