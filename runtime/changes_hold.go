package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
)

// holdStill pauses the container id, if bulkhead has a record of it and
// its job can run, for the length of a live export of its workspaces, and
// returns what lets it go on. An export judges a directory by what it
// holds and then writes its entries: a job that swapped a HEAD directory
// for a HEAD file between the two, thousands of times a second, got a
// repository whose config the host's git runs into the tar and the
// patch. The walks judge and write each directory from one look at it
// (workspace's layer.look), which holds against any writer; paused, the
// job's own processes write nothing meanwhile, so its export is of one
// instant and does not fail for a directory that changed, as `docker
// commit` pauses a container. A pod-mate handed a descriptor of the
// workspace is not paused: the one look is what holds there. A container
// whose job cannot run (stopped, paused, or created on runsc, which
// cannot pause one) is left as it is; a runsc container must still be
// created after the export, or the export fails.
func holdStill(g *Globals, id string) (release func() error, err error) {
	c, err := lookupRecorded(g, "export", id)
	if errors.Is(err, os.ErrNotExist) {
		// Nothing of it runs under bulkhead: the export says what it has.
		return func() error { return nil }, nil
	}
	if err != nil {
		return nil, err
	}
	b := c.backend
	report, err := askBackendState(g, b, id)
	status := report.Status
	if err != nil {
		return nil, fmt.Errorf("container %s: cannot tell whether its job runs, so its workspaces cannot be read still: %w", id, err)
	}
	switch {
	case status == "running" || status == "created" && !b.IsGVisor():
	case status == "stopped" && b.Kind() == "runc" && runcLeftovers(g, b, id):
		// runc calls it stopped and will not pause it.
		return nil, fmt.Errorf("container %s: its init has ended but its cgroup still holds processes, which runc will not pause; end them (bulkhead kill --all %s KILL) and export again", id, id)
	case status == "created":
		return func() error {
			if now, err := askBackendState(g, b, id); err != nil || now.Status != "created" {
				return fmt.Errorf("container %s was started while its workspaces were read: export again", id)
			}
			return nil
		}, nil
	default:
		return func() error { return nil }, nil
	}
	// runc 1.1's cgroup v1 freezer gives up when the group does not
	// settle on a busy machine, and thaws it: an engine pauses again.
	for try := 1; ; try++ {
		err := backend.Quietly(g.backendArgv(b, "pause", id))
		if err == nil {
			break
		}
		if try == pauseTries {
			return nil, fmt.Errorf("container %s: pausing it, so its workspaces are read still: %w", id, err)
		}
		time.Sleep(time.Second)
	}
	return func() error {
		if err := backend.Quietly(g.backendArgv(b, "resume", id)); err != nil {
			logrus.Errorf("bulkhead: container %s stays paused: %v", id, err)
			return fmt.Errorf("container %s was paused for the export and could not be resumed (bulkhead resume %s): %w", id, id, err)
		}
		return nil
	}, nil
}

// pauseTries bounds the pauses a live export tries.
const pauseTries = 5

// runcLeftovers tells whether a runc container's cgroups still hold a
// process, as the threads of an init that ended its main thread do.
func runcLeftovers(g *Globals, b *backend.Backend, id string) bool {
	data, err := os.ReadFile(filepath.Join(state.BackendRoot(g.Root, b.Name), id, "state.json"))
	if err != nil {
		return false // runc has no such container
	}
	var st runcState
	return !st.decode(data) || holdsTasks(st.CgroupPaths)
}
