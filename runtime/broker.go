package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
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
// unprivileged broker (ServeBroker), which reports "ok" on ready. Any
// failure before that is reported on ready instead.
func RunBroker(g *Globals, id string, initPid int, socket string, ready *os.File) error {
	err := execServingBroker(g, id, initPid, socket)
	if ready != nil {
		fmt.Fprintln(ready, err)
		ready.Close()
	}
	return err
}

// brokerSettings is what the unprivileged broker gets from the root one,
// on a pipe: it can no longer read the configuration or the record.
type brokerSettings struct {
	Egress   []string   `json:"egress"`
	MaxConns int        `json:"max_conns"`
	MaxBytes int64      `json:"max_bytes"`
	ID       string     `json:"id"`
	Profile  string     `json:"profile"`
	Backend  string     `json:"backend"`
	Mode     specs.Mode `json:"mode"`
	// Only for the root broker: the user to become and the log to open.
	uid, gid uint32
	auditLog string
}

// The descriptors the root broker hands over, in the order of
// --serve-fds.
const (
	fdSettings = iota
	fdListener
	fdInit
	fdRecord
	fdAudit
	nServeFds
)

func execServingBroker(g *Globals, id string, initPid int, socket string) error {
	set, ln, pidfd, err := newBroker(g, id, initPid, socket)
	if err != nil {
		return err
	}
	reg, err := state.OpenRegistry(g.Root)
	if err != nil {
		return err
	}
	fds := make([]int, nServeFds)
	fds[fdInit] = pidfd
	lf, err := ln.(interface{ File() (*os.File, error) }).File()
	if err != nil {
		return fmt.Errorf("egress broker %s: %w", id, err)
	}
	ln.Close()
	fds[fdListener] = int(lf.Fd())
	// The record's directory, held open: its link count drops to 0 when
	// delete removes it, which the broker can see without searching the
	// root-only state directory.
	if fds[fdRecord], err = unix.Open(reg.Dir(id), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("egress broker %s: %w", id, err)
	}
	fds[fdAudit] = -1
	if path := set.auditLog; path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return fmt.Errorf("audit log %s: %w", path, err)
		}
		f, err := audit.Open(path)
		if err != nil {
			return err
		}
		fds[fdAudit] = int(f.Fd())
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	// Far below the pipe's buffer: written whole before the exec.
	if err := json.NewEncoder(w).Encode(set); err != nil {
		return err
	}
	w.Close()
	fds[fdSettings] = int(r.Fd())
	self, err := os.Executable()
	if err != nil {
		return err
	}
	list := make([]string, len(fds))
	for i, fd := range fds {
		list[i] = strconv.Itoa(fd)
	}
	argv := []string{self, BrokerVerb, "--serve-fds", strings.Join(list, ","), "--ready-fd", "3", id}
	keep := []int{3}
	for _, fd := range fds {
		if fd >= 0 {
			keep = append(keep, fd)
		}
	}
	return egress.ExecUnprivileged(int(set.uid), int(set.gid), argv, []string{}, keep)
}

// ServeBroker is the broker once it runs unprivileged: it takes the
// descriptors the root broker left it, puts itself under its seccomp
// filter, reports "ok" on ready, and serves until the container's init
// exits, its record is deleted or it gets SIGTERM.
func ServeBroker(serveFds string, ready *os.File) error {
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
	b, ln, fds, err := servingBroker(serveFds)
	if err != nil {
		return report(err)
	}
	// Not dumpable: another process of the broker's uid (another
	// container's broker) cannot trace it or read its memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return report(fmt.Errorf("egress broker: %w", err))
	}
	if err := egress.InstallFilter(); err != nil {
		return report(err)
	}
	report(nil)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer cancel()
		polled := []unix.PollFd{{Fd: int32(fds[fdInit]), Events: unix.POLLIN}}
		for ctx.Err() == nil {
			n, err := unix.Poll(polled, 1000)
			if err == nil && n > 0 {
				return // the init exited: the container's network is gone
			}
			var st unix.Stat_t
			if unix.Fstat(fds[fdRecord], &st) == nil && st.Nlink == 0 {
				return // deleted
			}
		}
	}()
	if ln.Addr().Network() == "unix" {
		// Room for the connections the profile allows and a few being
		// refused or closing: the rest wait, or are reset.
		ln = egress.MuxListener(ln, b.MaxConns+8)
	}
	return b.Serve(ctx, ln)
}

// servingBroker rebuilds the broker from what --serve-fds hands over.
func servingBroker(serveFds string) (*egress.Broker, net.Listener, []int, error) {
	parts := strings.Split(serveFds, ",")
	if len(parts) != nServeFds {
		return nil, nil, nil, fmt.Errorf("egress broker: --serve-fds %q: want %d descriptors", serveFds, nServeFds)
	}
	fds := make([]int, nServeFds)
	for i, p := range parts {
		fd, err := strconv.Atoi(p)
		if err != nil || (fd < 3 && !(i == fdAudit && fd == -1)) {
			return nil, nil, nil, fmt.Errorf("egress broker: --serve-fds %q: bad descriptor %q", serveFds, p)
		}
		fds[i] = fd
	}
	sf := os.NewFile(uintptr(fds[fdSettings]), "settings")
	var set brokerSettings
	err := json.NewDecoder(sf).Decode(&set)
	sf.Close()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("egress broker: settings: %w", err)
	}
	allow, err := specs.ParseEgress(set.Egress)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("egress broker %s: %w", set.ID, err)
	}
	lf := os.NewFile(uintptr(fds[fdListener]), "listener")
	ln, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("egress broker %s: listener: %w", set.ID, err)
	}
	var log *os.File
	if fds[fdAudit] >= 0 {
		log = os.NewFile(uintptr(fds[fdAudit]), "audit log")
	}
	rec := &state.Record{ID: set.ID, Profile: set.Profile, Backend: set.Backend, Mode: set.Mode}
	b := &egress.Broker{Allow: allow, MaxConns: set.MaxConns, MaxBytes: set.MaxBytes,
		Audit: func(c egress.Connection) { auditConnection(log, rec, c) }, AuditOverhead: auditOverhead(rec)}
	return b, ln, fds, nil
}

// auditOverhead is what an egress line of rec's takes beside the fields
// the job chooses (destination, address, reason), at its longest: the
// record's id and profile are the caller's and the operator's, and a
// fixed guess undercounted long ones.
func auditOverhead(rec *state.Record) int {
	longest := int64(math.MaxInt64)
	e := &audit.Entry{Event: "egress", ID: rec.ID, Profile: rec.Profile, Backend: rec.Backend, Mode: rec.Mode,
		Destination: "x", Address: "x", BytesSent: &longest, BytesReceived: &longest, Outcome: "left out", Error: "x",
		Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}
	line, err := json.Marshal(e)
	if err != nil {
		return 0
	}
	// The newline, less the three values "x" that stand in for the job's.
	return len(line) + 1 - 3*len(`"x"`)
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
		ln, err = egress.ListenUnix(socket)
	} else {
		ln, err = egress.ListenIn(initPid, pidfd, specs.EgressProxyAddr)
	}
	if err != nil {
		unix.Close(pidfd)
		return nil, nil, -1, fmt.Errorf("egress broker %s: %w", id, err)
	}
	set := &brokerSettings{Egress: profile.Egress, MaxConns: profile.EgressConnections, MaxBytes: maxBytes,
		ID: rec.ID, Profile: rec.Profile, Backend: rec.Backend, Mode: rec.Mode,
		uid: uid, gid: gid, auditLog: cfg.AuditLog}
	return set, ln, pidfd, nil
}

// auditConnection writes one line of the audit log, open as log (nil:
// none), for one connection.
func auditConnection(log *os.File, rec *state.Record, c egress.Connection) {
	if log == nil {
		return
	}
	sent, received := c.Sent, c.Received
	e := &audit.Entry{Event: "egress", ID: rec.ID, Profile: rec.Profile, Backend: rec.Backend, Mode: rec.Mode,
		Destination: c.Destination, Address: c.Address, BytesSent: &sent, BytesReceived: &received,
		Outcome: c.Verdict, Error: c.Reason}
	if err := audit.WriteTo(log, e); err != nil {
		logrus.Warnf("bulkhead: %v", err)
	}
}
