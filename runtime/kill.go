package runtime

import (
	"fmt"
	"os"

	"github.com/opencontainers/runc/libcontainer/system"
	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
)

// Kill is the kill verb. A job can end its init's leader thread with
// exit(2) while its other threads work on: runc then calls the container
// stopped and refuses a signal for its init, so an engine's stop would
// report success and leave the work running. Such a container's signal
// goes to every process of it (runc's kill --all), as it would have
// reached the init's whole thread group.
func Kill(g *Globals, v Values, args []string) error {
	id := ""
	if len(args) > 0 {
		id = args[0]
	}
	b, _, rec, err := owner(g, id)
	if err != nil {
		return err
	}
	if rec != nil && !v.Bool("all") && onlyLeaderGone(b, rec) {
		logrus.Warnf("bulkhead: kill %s: the init's leader has exited but its threads run; signalling every process", id)
		return execBackend(g.backendArgv(b, "kill", append([]string{"--all"}, args...)...))
	}
	return passthroughTo(g, b, "kill", v, args)
}

// signalInit is Kill's choice for bulkhead's own forwarding of a signal
// to a container's init (run).
func signalInit(g *Globals, b *backend.Backend, rec *state.Record, id, sig string) error {
	args := []string{id, sig}
	if onlyLeaderGone(b, rec) {
		args = append([]string{"--all"}, args...)
	}
	return backend.Quietly(g.backendArgv(b, "kill", args...))
}

// onlyLeaderGone tells whether a runc container's init is the verified
// process with its leader a zombie and another of its threads alive.
// runsc's sandbox is the recorded pid there, and gVisor judges its own
// processes.
func onlyLeaderGone(b *backend.Backend, rec *state.Record) bool {
	if b.Kind() != "runc" || rec.InitPid <= 1 {
		return false
	}
	st, err := system.Stat(rec.InitPid)
	if err != nil || st.StartTime != rec.InitStart || st.State != system.Zombie {
		return false
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", rec.InitPid))
	return err == nil && len(tasks) > 1
}
