package runtime

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
)

// startsByFifo is whether runc's start would do nothing but release the
// init, which create records: runc (1.2 and later run poststart hooks at
// start) and no poststart hook in the handed spec.
func startsByFifo(b *backend.Backend, handed *rspec.Spec) bool {
	return b.Kind() == "runc" && (handed.Hooks == nil || len(handed.Hooks.Poststart) == 0)
}

// execFifo is the fifo runc's create leaves in the container's state
// directory and its start removes: while it is there, the init waits.
const execFifo = "exec.fifo"

// runcStateDir is runc's state directory of container id.
func runcStateDir(g *Globals, b *backend.Backend, id string) string {
	return filepath.Join(state.BackendRoot(g.Root, b.Name), id)
}

// startByFifo releases a created runc container's init as `runc start`
// does (libcontainer's exec: open the container's exec.fifo, read the one
// byte the init writes, remove the fifo), in this process rather than a
// second one: a runc process costs a start more than all of bulkhead's
// own work for it. It handles a container only in the one state where
// that is all runc would do. handled is false otherwise, and the caller
// runs runc's start, which answers in runc's own words: a running,
// stopped or paused container, an init that is not the verified one, a
// state directory laid out otherwise. (A notify socket runc would serve
// never reaches it: ScrubEnvironment.)
func startByFifo(g *Globals, b *backend.Backend, rec *state.Record, id string) (handled bool, err error) {
	if !rec.StartsByFifo || b.Kind() != "runc" {
		return false, nil
	}
	// runc's state directory is held open before the init is looked at,
	// and the fifo reached through it: while the verified init runs the
	// directory is its container's, and a start stopped meanwhile finds,
	// once that container is deleted, a directory with no fifo, never the
	// one runc made again for another create of the id.
	d, err := os.Open(runcStateDir(g, b, id))
	if err != nil {
		return false, nil
	}
	defer d.Close()
	dir := fmt.Sprintf("/proc/self/fd/%d", d.Fd())
	if !state.StillRunning(rec) {
		return false, nil
	}
	fifo := filepath.Join(dir, execFifo)
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != fs.ModeNamedPipe {
		return false, nil
	}
	if st, err := os.Lstat(filepath.Join(dir, "state.json")); err != nil || !st.Mode().IsRegular() {
		return false, nil
	}
	if frozen, err := cgroups.Frozen(rec.InitPid); err != nil || frozen {
		return false, nil
	}
	if state.InitReleased(rec) {
		// An earlier start released the init and was killed before it
		// removed the fifo: no writer will come, and without the fifo
		// runc calls the container running. Asked before this start's
		// own open, which releases the init too.
		_ = os.Remove(fifo)
		return true, errors.New("cannot start an already running container")
	}
	return true, releaseInit(rec, fifo)
}

// initDeadPoll is how often a start waiting on the fifo looks whether
// the init still lives, as libcontainer does.
const initDeadPoll = 100 * time.Millisecond

// releaseInit opens the fifo, which meets the init's waiting open. An
// init that died first, or a start that released it first, leaves no
// writer, so the open is given up once the init is seen dead or the fifo
// gone; of a dead init only a byte it wrote before dying counts.
func releaseInit(rec *state.Record, fifo string) error {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_RDONLY, 0)
		ch <- opened{f, err}
	}()
	tick := time.NewTicker(initDeadPoll)
	defer tick.Stop()
	for {
		select {
		case o := <-ch:
			return readExecFifo(o.f, o.err)
		case <-tick.C:
			if _, err := os.Lstat(fifo); errors.Is(err, os.ErrNotExist) {
				// Another start released the init and removed the fifo
				// after this one's open began: no writer will come.
				return errors.New("cannot start an already running container")
			}
			if state.StillRunning(rec) {
				continue
			}
			f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if readExecFifo(f, err) != nil {
				return errors.New("container process is already dead")
			}
			return nil
		}
	}
}

// readExecFifo reads until the init closes its end, at its exec of the
// container's program, so that start returns once the program runs.
// Nothing read means another start released the init first.
func readExecFifo(f *os.File, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		// Another start released the init and removed the fifo first.
		return errors.New("cannot start an already running container")
	}
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return errors.New("cannot start an already running container")
	}
	// The byte says this start released the init. A second start may
	// have seen the init's program running before this one removed the
	// fifo, and removed it itself.
	if err := os.Remove(f.Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
