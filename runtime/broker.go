package runtime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/runtime/detach"
	"bulkhead.dev/bulkhead/runtime/egress"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// BrokerVerb is the hidden verb of the egress broker: a re-exec of
// bulkhead itself, outside the container's cgroup and namespaces, that
// proxies the job's HTTP to the profile's egress list.
const BrokerVerb = "broker"

// startBroker starts the egress broker of a created and verified
// container whose profile lists egress. Without it the job's proxy would
// not be there, which fails closed, but a create that promises egress and
// cannot give it is an error the caller must see. Audit mode starts none:
// it promises the backend's own behaviour.
func (c *creation) startBroker() error {
	if len(c.sel.Profile.Egress) == 0 || c.sel.Profile.Mode != specs.Enforce {
		return nil
	}
	if joinsNetworkNamespace(c.handed) {
		// A pod's containers share its sandbox's namespace, and with it the
		// sandbox's broker on the one address, under the sandbox's list.
		logrus.Infof("bulkhead: %s joins a network namespace: its egress is the namespace owner's broker", c.rec.ID)
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	pid, err := detach.Spawn("egress broker", brokerArgv(self, c.g, true, c.rec.ID, c.rec.InitPid))
	if err != nil {
		return fmt.Errorf("egress: start broker: %w", err)
	}
	logrus.Debugf("bulkhead: egress broker %d serves %s on %s", pid, c.rec.ID, specs.EgressProxyAddr)
	c.rec.BrokerPid = pid
	return nil
}

func joinsNetworkNamespace(s *rspec.Spec) bool {
	if s.Linux == nil {
		return false
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == rspec.NetworkNamespace && ns.Path != "" {
			return true
		}
	}
	return false
}

// brokerArgv is the command line of a broker (spawn is the intermediate
// that detaches it), with the globals that find the container's record.
func brokerArgv(self string, g *Globals, spawn bool, id string, pid int) []string {
	var args []string
	if spawn {
		args = append(args, "--spawn")
	} else {
		args = append(args, "--ready-fd", "3")
	}
	args = append(args, "--pid", strconv.Itoa(pid), id)
	return g.selfArgv(self, BrokerVerb, args...)
}

// SpawnBroker is the intermediate process between create and the broker.
func SpawnBroker(g *Globals, id string, initPid int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return detach.Detach("egress broker", brokerArgv(self, g, false, id, initPid))
}

// RunBroker is the broker verb: it listens in the network namespace of
// the container's init, reports "ok" on ready, and serves until the init
// exits, the container's record is deleted or it gets SIGTERM.
func RunBroker(g *Globals, id string, initPid int, ready *os.File) error {
	report := func(err error) error {
		if ready != nil {
			if err != nil {
				fmt.Fprintln(ready, err)
			} else {
				fmt.Fprintln(ready, "ok")
			}
			ready.Close()
		}
		return err
	}
	b, ln, pidfd, err := newBroker(g, id, initPid)
	if err != nil {
		return report(err)
	}
	defer unix.Close(pidfd)
	report(nil)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reg, _ := state.OpenRegistry(g.Root)
	go func() {
		defer cancel()
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		for ctx.Err() == nil {
			n, err := unix.Poll(fds, 1000)
			if err == nil && n > 0 {
				return // the init exited: the container's network is gone
			}
			if _, err := os.Stat(filepath.Join(reg.Dir(id), "record.json")); errors.Is(err, os.ErrNotExist) {
				return
			}
		}
	}()
	return b.Serve(ctx, ln)
}

// newBroker reads the container's profile from its record and opens the
// broker's listener in the namespace of the init, held by a pidfd the
// caller closes.
func newBroker(g *Globals, id string, initPid int) (*egress.Broker, net.Listener, int, error) {
	if err := state.CheckID(id); err != nil {
		return nil, nil, -1, err
	}
	if initPid <= 0 {
		return nil, nil, -1, fmt.Errorf("egress broker %s: want --pid", id)
	}
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, nil, -1, err
	}
	reg, err := state.OpenRegistry(g.Root)
	if err != nil {
		return nil, nil, -1, err
	}
	rec, err := reg.Get(id)
	if err != nil {
		return nil, nil, -1, fmt.Errorf("egress broker %s: %w", id, err)
	}
	profile, ok := cfg.Profiles[rec.Profile]
	if !ok {
		return nil, nil, -1, fmt.Errorf("egress broker %s: profile %q is not configured", id, rec.Profile)
	}
	allow, err := specs.ParseEgress(profile.Egress)
	if err == nil && len(allow) == 0 {
		err = fmt.Errorf("profile %s has no egress", profile.Name)
	}
	if err != nil {
		return nil, nil, -1, fmt.Errorf("egress broker %s: %w", id, err)
	}
	maxBytes, err := profile.EgressBytesLimit()
	if err != nil {
		return nil, nil, -1, err
	}
	pidfd, err := unix.PidfdOpen(initPid, 0)
	if err != nil {
		return nil, nil, -1, fmt.Errorf("egress broker %s: container init %d: %w", id, initPid, err)
	}
	ln, err := egress.ListenIn(initPid, pidfd, specs.EgressProxyAddr)
	if err != nil {
		unix.Close(pidfd)
		return nil, nil, -1, fmt.Errorf("egress broker %s: %w", id, err)
	}
	b := &egress.Broker{Allow: allow, MaxConns: profile.EgressConnections, MaxBytes: maxBytes,
		Audit: func(c egress.Connection) { auditConnection(cfg.AuditLog, rec, c) }}
	return b, ln, pidfd, nil
}

// stopBroker ends a container's broker: SIGTERM, which closes its
// connections and writes their audit lines, then SIGKILL if it is still
// there after 5 s. A pid that is no longer this container's broker is
// left alone.
func stopBroker(pid int, id string) error {
	if pid <= 0 {
		return nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("egress broker %d: %w", pid, err)
	}
	defer unix.Close(fd)
	// Checked after the pidfd is held: the pid cannot be reused meanwhile.
	if !isBroker(pid, id) {
		return nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		return fmt.Errorf("egress broker %d: %w", pid, err)
	}
	if exited(fd, 5*time.Second) {
		return nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("egress broker %d: %w", pid, err)
	}
	if !exited(fd, 5*time.Second) {
		return fmt.Errorf("egress broker %d still there 5 s after SIGKILL", pid)
	}
	return nil
}

func exited(pidfd int, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return false
		}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// isBroker tells whether pid runs the broker verb for id.
func isBroker(pid int, id string) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	return len(args) > 1 && args[len(args)-1] == id && strings.Contains(string(data), "\x00"+BrokerVerb+"\x00")
}

// auditConnection writes one line of the audit log for one connection.
func auditConnection(path string, rec *state.Record, c egress.Connection) {
	sent, received := c.Sent, c.Received
	e := &audit.Entry{Event: "egress", ID: rec.ID, Profile: rec.Profile, Backend: rec.Backend, Mode: rec.Mode,
		Destination: c.Destination, Address: c.Address, BytesSent: &sent, BytesReceived: &received,
		Outcome: c.Verdict, Error: c.Reason}
	if err := audit.Write(path, e); err != nil {
		logrus.Warnf("bulkhead: %v", err)
	}
}
