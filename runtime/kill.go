package runtime

import (
	"fmt"

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
	b, _, rec, err := owner(g, id)
	if err != nil {
		return err
	}
	if rec != nil && b.IsGVisor() {
		// runsc answers a signal for a sandbox that has ended with
		// "sandbox is not running", which no engine takes for the end:
		// containerd's shim stopped such a pod again and again, for
		// ever. runc's words for it are what engines know.
		if report, err := askBackendState(g, b, id); err == nil && report.Status == "stopped" {
			return fmt.Errorf("kill %s: container not running", id)
		}
	}
	if rec != nil && !v.Bool("all") && outlivesInit(g, b, rec, id) {
		logrus.Warnf("bulkhead: kill %s: the init has ended but processes of the container run; signalling every one", id)
		return execBackend(g.backendArgv(b, "kill", append([]string{"--all"}, positional(args)...)...))
	}
	return passthroughTo(g, b, "kill", v, args)
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
