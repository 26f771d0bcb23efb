package egresshost

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/nsthread"
)

// ListenIn opens a TCP listener on addr inside the network namespace of
// the process pidfd holds (the container's init), from a process that
// stays in the host's namespace. A socket belongs to the namespace it was
// made in, whatever thread uses it later: so one OS thread enters the
// container's namespace, makes the socket and goes back, and the broker
// accepts there while it dials from the host.
//
// It refuses a namespace that is the broker's own (a container sharing the
// host's network), and a pid that no longer is the process of pidfd.
func ListenIn(pid, pidfd int, addr string) (net.Listener, error) {
	nsPath := fmt.Sprintf("/proc/%d/ns/net", pid)
	target, err := os.Open(nsPath)
	if err != nil {
		return nil, fmt.Errorf("network namespace of %d: %w", pid, err)
	}
	defer target.Close()
	// The pid could have been reused between the pidfd and the open:
	// while the pidfd's process lives, the pid is its.
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return nil, fmt.Errorf("container init %d: %w", pid, err)
	}
	var theirs, ours unix.Stat_t
	if err := unix.Fstat(int(target.Fd()), &theirs); err != nil {
		return nil, err
	}
	if err := unix.Stat("/proc/self/ns/net", &ours); err != nil {
		return nil, err
	}
	if theirs.Dev == ours.Dev && theirs.Ino == ours.Ino {
		return nil, errors.New("the container shares the host's network namespace: the broker would listen on the host")
	}

	var ln net.Listener
	err = nsthread.Run(target, "net", func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, fmt.Errorf("listen on %s in the container's network namespace: %w", addr, err)
	}
	return ln, nil
}

// ListenUnix opens the broker's unix socket at path for a runsc sandbox,
// whose own loopback no host socket can reach. Only bulkhead connects to
// it, as root, at start, to donate the connection to the sandbox's
// forwarder: the socket is root's, mode 0600, in the container's root-only
// state directory, and never shown to the sandbox. The listener leaves the
// file in place when closed: the broker that serves it is another program
// image (ExecUnprivileged).
//
// It binds through the directory's descriptor: a socket's path is
// limited to 107 bytes, which a state directory below an engine's root
// and a 64-character container id easily exceed.
func ListenUnix(path string) (net.Listener, error) {
	dir, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	defer unix.Close(dir)
	short := fmt.Sprintf("/proc/self/fd/%d/%s", dir, filepath.Base(path))
	ln, err := net.Listen("unix", short)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := unix.Fchmodat(dir, filepath.Base(path), 0o600, 0); err != nil {
		ln.Close()
		_ = unix.Unlinkat(dir, filepath.Base(path), 0)
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return ln, nil
}

// DialUnix connects to the broker's socket at path, however long.
func DialUnix(path string) (*net.UnixConn, error) {
	dir, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	defer unix.Close(dir)
	c, err := net.Dial("unix", fmt.Sprintf("/proc/self/fd/%d/%s", dir, filepath.Base(path)))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	return c.(*net.UnixConn), nil
}
