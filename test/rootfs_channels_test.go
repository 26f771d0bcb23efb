package test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestRootfsHoldingASocketOrFIFO: a rootfs of plain storage is a host
// tree, as a bind source is. A host service listening on a socket in it
// was reached by a runc job without a network (a read-only root does not
// stop a connect), and a FIFO in it is a pipe to whatever host process
// reads it. Both are refused at create, as in a bind source, and the same
// rootfs without them runs.
func TestRootfsHoldingASocketOrFIFO(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		b := bundle.New(t, []string{"true"})
		rootfs := filepath.Join(b, "rootfs")
		refused := func(what, path string) {
			t.Helper()
			rootRefused(t, g, root, backend, b, what, path+" is a socket or a FIFO")
		}
		run := filepath.Join(rootfs, "run")
		if err := os.MkdirAll(run, 0o755); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(run, "host.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		refused("a host service's socket in the rootfs", sock)
		// A mount over its directory hides it from the host's view, not
		// from the job's: the rootfs's pin carries no submount.
		mountAt(t, "tmpfs", run, "size=1m", 0)
		refused("a host service's socket below a mount point in the rootfs", sock)
		if err := unix.Unmount(run, unix.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
		l.Close() // unlinks the socket

		fifo := filepath.Join(rootfs, "var", "pipe")
		if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mkfifo(fifo, 0o666); err != nil {
			t.Fatal(err)
		}
		refused("a FIFO in the rootfs", fifo)
		if err := os.Remove(fifo); err != nil {
			t.Fatal(err)
		}

		id := uniqueID("channel-none-" + backend)
		must(t, append(g, "run", "--bundle", b, id)...)
		bulkhead(t, "", append(g, "delete", "--force", id)...)
	})
}
