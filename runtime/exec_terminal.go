package runtime

import (
	"fmt"
	"net"
	"os"

	"github.com/containerd/console"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/backend"
)

// gvisorExecOnPty runs a runsc exec whose process has a terminal on a pty
// bulkhead makes. runsc makes an attached exec's own stdio the process's
// terminal and gives those descriptors to the sandbox's host user for
// good; it reads --console-socket only when it detaches itself, which
// bulkhead does in its place (detachGVisorExec). Handed the caller's
// stdio, runsc would give away the caller's terminal, a root file given
// as output, or the host's /dev/null. So runsc gets the slave of a fresh
// pty, and the master goes where runc would send its own: to the
// caller's console socket, or, without one, joined to bulkhead's stdio
// as runc exec -t does.
func gvisorExecOnPty(g *Globals, b *backend.Backend, v Values, process, id string) error {
	socket := v.String("console-socket")
	if v.Bool("detach") && socket == "" {
		return fmt.Errorf("exec %s: a detached exec with a terminal needs --console-socket to receive it", id)
	}
	master, slavePath, err := console.NewPty()
	if err != nil {
		return fmt.Errorf("exec %s: terminal: %w", id, err)
	}
	defer master.Close()
	slave, err := os.OpenFile(slavePath, os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("exec %s: terminal: %w", id, err)
	}
	defer slave.Close()
	if socket != "" {
		if err := sendConsole(socket, master); err != nil {
			return fmt.Errorf("exec %s: console socket: %w", id, err)
		}
	}
	if v.Bool("detach") {
		return detachGVisorExec(g, b, v, process, id, slave)
	}
	flags, _ := ForwardFlags("exec", v, true, append(processFlags, "console-socket")...)
	argv := g.backendArgv(b, "exec", append(append([]string{"--process", process}, flags...), id)...)
	watch := func(exited <-chan struct{}) error {
		// Only the process holds the slave now: its end is the master's EOF.
		slave.Close()
		if socket != "" {
			return nil
		}
		tty := localConsole(master)
		defer tty.close()
		<-exited
		return nil
	}
	backend.ForwardEverySignal() // the process gets the caller's, as with runc exec
	status, err := backend.SuperviseOn(slave, argv, v.Int("preserve-fds"), 0, watch)
	if err != nil {
		return err
	}
	if status != 0 {
		return &ExitError{Status: status}
	}
	return nil
}

// sendConsole sends a pty master to a console socket the way runc does:
// one message naming the terminal, the descriptor as SCM_RIGHTS.
func sendConsole(socket string, master console.Console) error {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, _, err = conn.WriteMsgUnix([]byte(master.Name()), unix.UnixRights(int(master.Fd())), nil)
	return err
}
