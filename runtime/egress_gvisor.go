package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/egresshost"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// Egress on runsc. gVisor's netstack with --network=none has a loopback
// of its own that no host socket can listen on, and letting the sandbox
// connect to a host socket (runsc --host-uds=open) would open every
// socket its filesystem shows, connected as host root. So the broker
// listens on a unix socket in the container's root-only state directory,
// never shown to the sandbox; at start bulkhead connects to it and
// donates the connection to bulkhead-egress-forward as its standard
// input (runsc exec imports a process's descriptors into the sandbox).
// The forwarder, bound read-only from beside bulkhead, listens on
// specs.EgressProxyAddr and carries each of the job's connections as a
// stream multiplexed over that one connection (egress.MuxConfig). It
// runs as egress_broker_user with no capabilities and no_new_privs, so
// the job (another uid, no CAP_KILL) cannot signal or trace it; a job
// that still got hold of the stream would speak to the same broker, whose
// policy is outside.
const (
	egressForwarderBinary = "bulkhead-egress-forward"
	egressForwarderPath   = "/.bulkhead/egress-forward"
	// egressSocketName is the broker's socket in the state directory.
	egressSocketName = "egress.sock"
	// egressCheckDestination is what the forwarder's --check asks for.
	egressCheckDestination = "bulkhead-check.invalid:1"
	// egressCheckDeadline bounds the wait for the forwarder to listen.
	egressCheckDeadline = 10 * time.Second
)

// egressForwarderSource is bulkhead-egress-forward on the host, next to
// the running bulkhead; a variable so the runtime's own tests can name one.
var egressForwarderSource = func() (string, error) { return besideBulkhead(egressForwarderBinary) }

// addEgressForwarder gives a runsc container with egress the forwarder,
// read-only, and makes its init wait for it.
func (p *Plan) addEgressForwarder(at func(string) string, stateDir string) error {
	src, err := egressForwarderSource()
	if err != nil {
		return err
	}
	if why := ownBinaryRefusal(src); why != "" {
		return fmt.Errorf("mounts[%s]: %s", egressForwarderPath, why)
	}
	if why := ownPlaceRefusal(at(p.Handed.Root.Path), egressForwarderPath); why != "" {
		return fmt.Errorf("mounts[%s]: %s", egressForwarderPath, why)
	}
	p.EgressSocket = filepath.Join(stateDir, egressSocketName)
	p.Handed.Mounts = append(p.Handed.Mounts,
		rspec.Mount{Destination: egressForwarderPath, Type: "bind", Source: src, Options: []string{"bind", "ro", "nosuid", "nodev"}})
	p.decide(specs.Decision{Rule: "egress", Field: "mounts[" + egressForwarderPath + "]", Action: specs.Added, After: src + " ro,nosuid,nodev",
		Layer: specs.LayerEgressBroker, Why: "HTTP clients take a proxy as host:port: this program, started at start as egress_broker_user, listens on " + specs.EgressProxyAddr + " and carries connections over a stream to the broker that bulkhead hands it"})
	if p.Handed.Process == nil || len(p.Handed.Process.Args) == 0 {
		return fmt.Errorf("process.args: none, so nothing to start once the proxy listens")
	}
	// runsc cannot exec into a container before start, so the forwarder
	// comes up only after the job's init has been released: the init first
	// waits, as itself, until the proxy's address accepts, then executes
	// the job's own program in its place (same pid, user, filter).
	before := strings.Join(p.Handed.Process.Args, " ")
	p.Handed.Process.Args = append([]string{egressForwarderPath, "--await", specs.EgressProxyAddr, "--"}, p.Handed.Process.Args...)
	p.decide(specs.Decision{Rule: "egress", Field: "process.args", Action: specs.Added, Before: before, After: strings.Join(p.Handed.Process.Args, " "),
		Layer: specs.LayerEgressBroker, Why: "the job starts once its proxy at " + specs.EgressProxyAddr + " listens: runsc starts the forwarder only after the init"})
	return nil
}

// forwarderProcess is a process of the forwarder as runsc exec takes it:
// egress_broker_user, no capabilities, no_new_privs (and the container's
// seccomp filter, which runEgressForwarder adds).
func forwarderProcess(p *specs.Profile, args ...string) (*rspec.Process, error) {
	uid, gid, err := p.EgressBrokerIDs()
	if err != nil {
		return nil, err
	}
	return &rspec.Process{User: rspec.User{UID: uid, GID: gid}, Args: append([]string{egressForwarderPath}, args...),
		Env: []string{"PATH=/"}, Cwd: "/", Capabilities: &rspec.LinuxCapabilities{}, NoNewPrivileges: true}, nil
}

// startEgressForwarder starts the forwarder in a started runsc container
// with egress, then asks the broker, from inside the sandbox through the
// forwarder, for a destination no profile lists: without the broker's
// 403 the container is killed and start fails.
func startEgressForwarder(g *Globals, b *backend.Backend, p *specs.Profile, id string) error {
	err := runEgressForwarder(g, b, p, id)
	if err == nil {
		return nil
	}
	if kerr := backend.Quietly(g.backendArgv(b, "kill", "--all", id, "KILL")); kerr != nil {
		logrus.Errorf("bulkhead: start %s: kill after failed verification: %v", id, kerr)
	}
	return fmt.Errorf("verification after start: control egress: %w; the container was killed", err)
}

func runEgressForwarder(g *Globals, b *backend.Backend, p *specs.Profile, id string) error {
	reg, err := state.OpenRegistry(g.Root)
	if err != nil {
		return err
	}
	serve, err := forwarderProcess(p, "--serve", specs.EgressProxyAddr)
	if err != nil {
		return err
	}
	check, err := forwarderProcess(p, "--check", specs.EgressProxyAddr)
	if err != nil {
		return err
	}
	handed := filepath.Join(reg.Dir(id), privateBundleDir)
	s, _, err := specs.Load(handed)
	if err != nil {
		return err
	}
	// Under the container's own seccomp filter, as every exec'd process:
	// runsc gives an exec'd process none.
	for _, proc := range []*rspec.Process{serve, check} {
		if _, err := execUnderFilter(handed, s, proc); err != nil {
			return err
		}
	}
	dir := reg.Dir(id)
	serveFile, checkFile := filepath.Join(dir, "egress-forward.json"), filepath.Join(dir, "egress-check.json")
	for path, proc := range map[string]*rspec.Process{serveFile: serve, checkFile: check} {
		data, err := json.Marshal(proc)
		if err == nil {
			err = os.WriteFile(path, data, 0o600)
		}
		if err != nil {
			return err
		}
	}
	// Detached, stdout on /dev/null and stderr in a file: a pipe would
	// stay open as long as the forwarder lives. runsc appends a
	// --pid-file of its own to the command unless one is given.
	errFile, err := os.OpenFile(filepath.Join(dir, "egress-forward.err"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer errFile.Close()
	// The forwarder's way to the broker: a connection to its socket, made
	// here on the host and donated as the forwarder's standard input.
	conn, err := egresshost.DialUnix(filepath.Join(dir, egressSocketName))
	if err != nil {
		return fmt.Errorf("the broker's socket: %w", err)
	}
	stream, err := conn.File()
	conn.Close()
	if err != nil {
		return err
	}
	defer stream.Close()
	argv := g.backendArgv(b, "exec", "--detach", "--process", serveFile, "--pid-file", filepath.Join(dir, "egress-forward.pid"), id)
	if err := runDetached(argv, stream, errFile); err != nil {
		msg, _ := os.ReadFile(errFile.Name())
		return fmt.Errorf("start %s: %v: %s", egressForwarderPath, err, strings.TrimSpace(string(msg)))
	}
	var answer string
	for deadline := time.Now().Add(egressCheckDeadline); ; time.Sleep(100 * time.Millisecond) {
		out, err := backend.Query(g.backendArgv(b, "exec", "--process", checkFile, id))
		answer = string(out)
		if err == nil && strings.HasPrefix(answer, "HTTP/1.1 403") && strings.Contains(answer, egressCheckDestination+" is not in the profile's egress list") {
			return nil
		}
		if err != nil && jobEnded(g, b, id) {
			// The job waits only for the forwarder to listen, and a short
			// one can end before the check gets in: nothing of it runs
			// any more, so nothing can leave, and the container's exit is
			// the engine's. Not on stderr, which gVisor writes the
			// container's stderr to at offsets of its own.
			logrus.Infof("bulkhead: start %s: the job ended before the egress check", id)
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
	}
	status, _, _ := strings.Cut(answer, "\r\n")
	return fmt.Errorf("expected the broker's 403 for %s through %s inside the sandbox, got %q after %s", egressCheckDestination, specs.EgressProxyAddr, status, egressCheckDeadline)
}

// jobEnded tells whether the backend calls the container stopped. gVisor
// follows every thread and process of the job, so its stopped is the end.
func jobEnded(g *Globals, b *backend.Backend, id string) bool {
	return backend.Status(g.backendArgv(b, "state", id)) == "stopped"
}

// runDetached runs a backend whose children outlive it (runsc exec
// --detach): no pipe, which they would hold open, only in as standard
// input, /dev/null and errs.
func runDetached(argv []string, in, errs *os.File) error {
	ctx, cancel := context.WithTimeout(context.Background(), backend.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// runsc gives every descriptor it is handed to the sandbox's user:
	// only ones bulkhead made for this (never the host's /dev/null, which
	// os/exec would open for an unset one).
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, errs, errs
	return cmd.Run()
}
