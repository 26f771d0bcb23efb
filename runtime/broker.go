package runtime

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/runtime/detach"
	"bulkhead.dev/bulkhead/runtime/egresshost"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// BrokerVerb is the hidden verb of the egress broker: a re-exec of
// bulkhead itself, outside the container's cgroup and namespaces, that
// opens what needs root and becomes bulkhead-egress-broker, as the
// broker's user, which proxies the job's HTTP to the profile's egress
// list.
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
	socket := ""
	if c.plan.EgressSocket != "" {
		socket = c.plan.EgressSocket
	}
	pid, err := detach.Spawn("egress broker", brokerArgv(self, c.g, true, c.rec.ID, c.rec.InitPid, socket))
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
func brokerArgv(self string, g *Globals, spawn bool, id string, pid int, socket string) []string {
	var args []string
	if spawn {
		args = append(args, "--spawn")
	} else {
		args = append(args, "--ready-fd", "3")
	}
	if socket != "" {
		args = append(args, "--socket", socket)
	}
	args = append(args, "--pid", strconv.Itoa(pid), id)
	return g.selfArgv(self, BrokerVerb, args...)
}

// SpawnBroker is the intermediate process between create and the broker.
func SpawnBroker(g *Globals, id string, initPid int, socket string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return detach.Detach("egress broker", brokerArgv(self, g, false, id, initPid, socket))
}

// RunBroker is the broker verb, as root: it opens what only root can
// (the listener in the network namespace of the container's init, the
// audit log, the container's record) and replaces itself with the
// unprivileged broker (bulkhead-egress-broker), which reports "ok" on
// ready. Any failure before that is reported on ready instead.
func RunBroker(g *Globals, id string, initPid int, socket string, ready *os.File) error {
	err := execServingBroker(g, id, initPid, socket)
	if ready != nil {
		fmt.Fprintln(ready, err)
		ready.Close()
	}
	return err
}

// brokerSettings is what the root broker hands the unprivileged one,
// and what only the root broker uses: the user to become and the log to
// open.
type brokerSettings struct {
	egresshost.Settings
	uid, gid uint32
	auditLog string
}

func execServingBroker(g *Globals, id string, initPid int, socket string) error {
	set, ln, pidfd, err := newBroker(g, id, initPid, socket)
	if err != nil {
		return err
	}
	reg, err := state.OpenRegistry(g.Root)
	if err != nil {
		return err
	}
	fds := make([]int, egresshost.NServeFds)
	fds[egresshost.FdInit] = pidfd
	lf, err := ln.(interface{ File() (*os.File, error) }).File()
	if err != nil {
		return fmt.Errorf("egress broker %s: %w", id, err)
	}
	ln.Close()
	fds[egresshost.FdListener] = int(lf.Fd())
	// The record's directory, held open: its link count drops to 0 when
	// delete removes it, which the broker can see without searching the
	// root-only state directory.
	if fds[egresshost.FdRecord], err = unix.Open(reg.Dir(id), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("egress broker %s: %w", id, err)
	}
	fds[egresshost.FdAudit] = -1
	if path := set.auditLog; path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return fmt.Errorf("audit log %s: %w", path, err)
		}
		f, err := audit.Open(path)
		if err != nil {
			return err
		}
		fds[egresshost.FdAudit] = int(f.Fd())
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	// Far below the pipe's buffer: written whole before the exec.
	if err := json.NewEncoder(w).Encode(set.Settings); err != nil {
		return err
	}
	w.Close()
	fds[egresshost.FdSettings] = int(r.Fd())
	broker, err := brokerBinary()
	if err != nil {
		return err
	}
	list := make([]string, len(fds))
	for i, fd := range fds {
		list[i] = strconv.Itoa(fd)
	}
	argv := []string{broker, "--serve-fds", strings.Join(list, ","), "--ready-fd", "3", id}
	keep := []int{3}
	for _, fd := range fds {
		if fd >= 0 {
			keep = append(keep, fd)
		}
	}
	return egresshost.ExecUnprivileged(int(set.uid), int(set.gid), argv, []string{}, keep)
}

// newBroker reads the container's profile from its record and opens the
// broker's listener in the namespace of the init, held by a pidfd the
// caller closes.
func newBroker(g *Globals, id string, initPid int, socket string) (*brokerSettings, net.Listener, int, error) {
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
	uid, gid, err := profile.EgressBrokerIDs()
	if err != nil {
		return nil, nil, -1, err
	}
	pidfd, err := unix.PidfdOpen(initPid, 0)
	if err != nil {
		return nil, nil, -1, fmt.Errorf("egress broker %s: container init %d: %w", id, initPid, err)
	}
	var ln net.Listener
	if socket != "" {
		ln, err = egresshost.ListenUnix(socket)
	} else {
		ln, err = egresshost.ListenIn(initPid, pidfd, specs.EgressProxyAddr)
	}
	if err != nil {
		unix.Close(pidfd)
		return nil, nil, -1, fmt.Errorf("egress broker %s: %w", id, err)
	}
	set := &brokerSettings{Settings: egresshost.Settings{Egress: profile.Egress, MaxConns: profile.EgressConnections, MaxBytes: maxBytes,
		ID: rec.ID, Profile: rec.Profile, Backend: rec.Backend, Mode: rec.Mode},
		uid: uid, gid: gid, auditLog: cfg.AuditLog}
	return set, ln, pidfd, nil
}

// brokerBinary is the unprivileged broker's program, next to the running
// bulkhead, judged as every program of bulkhead's own is before root runs
// it: root's, in directories only root may change.
func brokerBinary() (string, error) {
	path, err := besideBulkhead(egresshost.BrokerBinary)
	if err != nil {
		return "", fmt.Errorf("egress broker: %w", err)
	}
	if why := ownBinaryRefusal(path); why != "" {
		return "", fmt.Errorf("egress broker: %s", why)
	}
	return path, nil
}
