package runtime

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

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
func holdStill(g *Globals, id string) (release func() error, paused bool, err error) {
	c, err := lookupRecorded(g, "export", id)
	if errors.Is(err, os.ErrNotExist) {
		// Nothing of it runs under bulkhead: the export says what it has.
		return func() error { return nil }, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	b := c.backend
	report, err := askBackendState(g, b, id)
	status := report.Status
	if err != nil {
		return nil, false, fmt.Errorf("container %s: cannot tell whether its job runs, so its workspaces cannot be read still: %w", id, err)
	}
	switch {
	case status == "running" || status == "created" && !b.IsGVisor():
	case status == "stopped" && b.Kind() == "runc" && runcLeftovers(g, b, id):
		// runc calls it stopped and will not pause it.
		return nil, false, fmt.Errorf("container %s: its init has ended but its cgroup still holds processes, which runc will not pause; end them (bulkhead kill --all %s KILL) and export again", id, id)
	case status == "created":
		return func() error {
			if now, err := askBackendState(g, b, id); err != nil || now.Status != "created" {
				return fmt.Errorf("container %s was started while its workspaces were read: export again", id)
			}
			return nil
		}, false, nil
	default:
		return func() error { return nil }, false, nil
	}
	// runc 1.1's cgroup v1 freezer gives up when the group does not
	// settle on a busy machine, and thaws it: an engine pauses again.
	for try := 1; ; try++ {
		err := backend.QuietlyApart(g.backendArgv(b, "pause", id))
		if err == nil {
			break
		}
		if try == pauseTries {
			return nil, false, fmt.Errorf("container %s: pausing it, so its workspaces are read still: %w", id, err)
		}
		time.Sleep(time.Second)
	}
	logrus.Debugf("bulkhead: container %s paused for its export", id)
	return func() error {
		var err error
		for try := 1; try <= pauseTries; try++ {
			if err = backend.QuietlyApart(g.backendArgv(b, "resume", id)); err == nil {
				logrus.Debugf("bulkhead: container %s resumed after its export", id)
				return nil
			}
			time.Sleep(time.Second)
		}
		logrus.Errorf("bulkhead: container %s stays paused: %v", id, err)
		return fmt.Errorf("container %s was paused for the export and could not be resumed (bulkhead resume %s): %w", id, id, err)
	}, true, nil
}

// still runs export with the container id held still (holdStill), and
// writes what it exported to w only once the container goes on again: a
// reader that stops reading (diff | head, a pager left open) ended
// bulkhead, or held it at its write, with the job paused for good. While
// the job is paused the export goes to an unnamed file, as bounded as the
// export is (changes_max_bytes, changes_max_files); a signal that would
// end bulkhead meanwhile resumes the container before bulkhead exits.
// Only SIGKILL leaves it paused, and the deadline still ends it.
func still(g *Globals, id string, w io.Writer, export func(io.Writer) ([]string, error)) ([]string, error) {
	signals := make(chan os.Signal, 16)
	stop := backend.Listen(signals)
	defer stop()
	release, paused, err := holdStill(g, id)
	if err != nil {
		return nil, err
	}
	select {
	case s := <-signals:
		return nil, errors.Join(exportInterrupted(id, s), release())
	default:
	}
	if !paused {
		stop() // a signal ends the export as it would any program
		rejected, err := export(w)
		return rejected, errors.Join(err, release())
	}
	spool, err := os.OpenFile(os.TempDir(), os.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("an unnamed file in %s to hold the export of %s while it is paused: %w", os.TempDir(), id, err), release())
	}
	defer spool.Close()
	type result struct {
		rejected []string
		err      error
	}
	done := make(chan result, 1)
	go func() {
		rejected, err := export(spool)
		done <- result{rejected, err}
	}()
	var r result
	select {
	case r = <-done:
	case s := <-signals:
		return nil, errors.Join(exportInterrupted(id, s), release())
	}
	if err := errors.Join(r.err, release()); err != nil {
		return r.rejected, err
	}
	stop()
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return r.rejected, err
	}
	_, err = io.Copy(w, spool)
	return r.rejected, err
}

// exportInterrupted is the error of an export that a signal s ended
// while it held the container id still.
func exportInterrupted(id string, s os.Signal) error {
	return fmt.Errorf("export of %s interrupted by signal %q; the container goes on", id, s)
}

// pauseTries bounds the pauses, and the resumes, a live export tries.
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
