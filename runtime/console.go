package runtime

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/console"
	"golang.org/x/sys/unix"
)

// consoleProxy gives `run` of a terminal container, and runsc's `exec -t`,
// what runc gives them when the caller passes no console socket: bulkhead
// receives the pty master itself and joins it to its own stdio, so that
// the caller's descriptors are never the process's.
type consoleProxy struct {
	dir    string
	ln     *net.UnixListener
	master chan *os.File
	pty    console.Console
	tty    console.Console // bulkhead's own terminal, if stdin is one
	copied chan struct{}   // closed when the container's output is all out
}

func newConsoleProxy() (*consoleProxy, error) {
	// A short path: sun_path holds 108 bytes, and the state root may be deep.
	dir, err := os.MkdirTemp("", "bulkhead-tty-")
	if err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "console.sock"), Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("console socket: %w", err)
	}
	p := &consoleProxy{dir: dir, ln: ln, master: make(chan *os.File, 1)}
	go p.receive()
	return p, nil
}

func (p *consoleProxy) path() string { return filepath.Join(p.dir, "console.sock") }

func (p *consoleProxy) receive() {
	conn, err := p.ln.AcceptUnix()
	if err != nil {
		p.master <- nil
		return
	}
	defer conn.Close()
	p.master <- recvFd(conn)
}

// attach waits for the backend to send the master, then copies bulkhead's
// stdin to it and its output to bulkhead's stdout, with bulkhead's own
// terminal in raw mode so keys reach the container unchanged.
func (p *consoleProxy) attach() error {
	var master *os.File
	select {
	case master = <-p.master:
	case <-time.After(10 * time.Second):
	}
	if master == nil {
		return fmt.Errorf("the backend sent no terminal on the console socket")
	}
	pty, err := console.ConsoleFromFile(master)
	if err != nil {
		master.Close()
		return fmt.Errorf("terminal: %w", err)
	}
	p.join(pty)
	return nil
}

// localConsole joins a pty master bulkhead made itself to its stdio.
func localConsole(master console.Console) *consoleProxy {
	p := &consoleProxy{}
	p.join(master)
	return p
}

// join copies bulkhead's stdin to the master and the master's output to
// bulkhead's stdout.
func (p *consoleProxy) join(pty console.Console) {
	p.pty = pty
	if tty, err := console.ConsoleFromFile(os.Stdin); err == nil {
		if err := tty.SetRaw(); err == nil {
			p.tty = tty
		}
	}
	p.resize()
	p.copied = make(chan struct{})
	go func() { _, _ = io.Copy(pty, os.Stdin) }()
	go func() {
		_, _ = io.Copy(os.Stdout, pty)
		close(p.copied)
	}()
}

// resize gives the container's terminal the size of bulkhead's own.
func (p *consoleProxy) resize() {
	if p.pty != nil && p.tty != nil {
		_ = p.pty.ResizeFrom(p.tty)
	}
}

// close restores bulkhead's terminal and removes the socket.
func (p *consoleProxy) close() {
	if p.copied != nil {
		// The last output may still be in the pty when the init exits.
		select {
		case <-p.copied:
		case <-time.After(time.Second):
		}
	}
	if p.tty != nil {
		_ = p.tty.Reset()
	}
	if p.pty != nil {
		p.pty.Close()
	}
	if p.ln != nil {
		p.ln.Close()
		os.RemoveAll(p.dir)
	}
}

// recvFd receives one file descriptor sent with SCM_RIGHTS, as a backend
// sends the pty master of a terminal container.
func recvFd(conn *net.UnixConn) *os.File {
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := conn.ReadMsgUnix(make([]byte, 4096), oob)
	if err != nil {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil
	}
	return os.NewFile(uintptr(fds[0]), "pty-master")
}

// withFlag is a flag set with one string flag set by bulkhead itself.
type withFlag struct {
	Values
	name, value string
}

func (w withFlag) IsSet(name string) bool { return name == w.name || w.Values.IsSet(name) }
func (w withFlag) String(name string) string {
	if name == w.name {
		return w.value
	}
	return w.Values.String(name)
}
