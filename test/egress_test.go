package test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/egresshost"
	"bulkhead.dev/bulkhead/test/leftover"
)

// egressHost is a test host: a network namespace of its own, joined to
// the host by a veth pair, where busybox httpd serves one file.
type egressHost struct {
	ns       string
	hostAddr string // the host's end of the veth: one of the host's own addresses
	addr     string // the test host's address
	cert     string // the certificate its HTTPS server presents for allowed.test
}

// newEgressHost makes the test host and removes it when the test ends.
// Its addresses are private (egresshost.New): the broker refuses them for a
// name unless the profile lists the address, as an operator would for an
// internal mirror.
func newEgressHost(t *testing.T) egressHost {
	t.Helper()
	eh := egresshost.New(t)
	h := egressHost{ns: eh.NS, hostAddr: eh.HostAddr, addr: eh.Addr}

	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "hello.txt"), []byte("hello from the test host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	httpd := exec.Command("ip", "netns", "exec", h.ns, bundle.Busybox, "httpd", "-f", "-p", h.addr+":80", "-h", www)
	if err := httpd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = httpd.Process.Kill(); _ = httpd.Wait() })

	// HTTPS: openssl's server with a certificate for allowed.test,
	// serving the same directory.
	h.cert = filepath.Join(t.TempDir(), "cert.pem")
	key := filepath.Join(t.TempDir(), "key.pem")
	if out, err := exec.Command("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=allowed.test",
		"-addext", "subjectAltName=DNS:allowed.test", "-keyout", key, "-out", h.cert).CombinedOutput(); err != nil {
		t.Fatalf("openssl req: %v\n%s", err, out)
	}
	tlsd := exec.Command("ip", "netns", "exec", h.ns, "openssl", "s_server", "-quiet", "-accept", h.addr+":443", "-cert", h.cert, "-key", key, "-WWW")
	tlsd.Dir = www
	if err := tlsd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tlsd.Process.Kill(); _ = tlsd.Wait() })

	// Reachable from the host before any container asks for it.
	for i := 0; ; i++ {
		out, err := exec.Command(bundle.Busybox, "wget", "-q", "-O-", "http://"+h.addr+"/hello.txt").Output()
		tlsOut, tlsErr := exec.Command("curl", "-sS", "--noproxy", "*", "--cacert", h.cert, "--resolve", "allowed.test:443:"+h.addr,
			"https://allowed.test/hello.txt").Output()
		if err == nil && strings.Contains(string(out), "hello from the test host") && tlsErr == nil && strings.Contains(string(tlsOut), "hello from the test host") {
			break
		}
		if i == 100 {
			t.Fatalf("test host %s does not answer: HTTP %v, HTTPS %v", h.addr, err, tlsErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return h
}

// egressConfig writes a configuration whose default profile lists egress,
// and a hosts file with the test's names.
func egressConfig(t *testing.T, h egressHost, extra string) (config, audit, hosts string) {
	t.Helper()
	dir := t.TempDir()
	audit = filepath.Join(dir, "audit.jsonl")
	config = filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("audit_log = %q\n[profiles.default]\negress = [\"allowed.test:80\", \"allowed.test:443\", \"%[2]s:80\", \"%[2]s:443\", \"meta.test:80\", \"loopback.test:80\"]\n%[3]s",
		audit, h.addr, extra)
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts = filepath.Join(dir, "hosts")
	names := fmt.Sprintf("127.0.0.1 localhost\n%s allowed.test other.test\n169.254.169.254 meta.test\n127.0.0.1 loopback.test\n", h.addr)
	if err := os.WriteFile(hosts, []byte(names), 0o644); err != nil {
		t.Fatal(err)
	}
	return config, audit, hosts
}

// egressEnv is what each egress test starts from: the test host, a
// configuration whose default profile lists it, a state root, the global
// flags for one backend and a container id.
type egressEnv struct {
	host               egressHost
	audit, hosts, root string
	g                  []string
	id                 string
}

// newEgressEnv sets up an egress test on backend; extra goes at the end of
// the configuration, name is the id's prefix.
func newEgressEnv(t *testing.T, backend, name, extra string) egressEnv {
	t.Helper()
	host := newEgressHost(t)
	config, audit, hosts := egressConfig(t, host, extra)
	root := stateRoot(t)
	return egressEnv{
		host:  host,
		audit: audit,
		hosts: hosts,
		root:  root,
		g:     []string{"--config", config, "--root", root, "--backend", backend},
		id:    uniqueID(name),
	}
}

// createWithHosts runs bulkhead create in a mount namespace of its own
// where hosts is /etc/hosts. The broker it starts stays in that namespace
// and resolves the test's names through the host's ordinary resolver
// (files, then DNS), the one it uses in production; the machine's own
// /etc/hosts, which other people's work shares, is never touched.
func createWithHosts(t *testing.T, hosts string, args ...string) result {
	t.Helper()
	script := `mount --bind "$0" /etc/hosts && exec "$@"`
	argv := append([]string{"--mount", "--propagation", "private", "sh", "-c", script, hosts, binaries.Bulkhead(t)}, args...)
	r := binaries.Cmd{}.Run(t, "unshare", argv...)
	return result{r.Stdout, r.Stderr, r.Code}
}

// egressLines are the audit log's egress events of id.
func egressLines(t *testing.T, audit, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range auditEvents(t, audit) {
		if e["event"] == "egress" && e["id"] == id {
			out = append(out, e)
		}
	}
	return out
}

// checkDestination is what bulkhead asks the broker for from inside a
// runsc sandbox at start, to see the way through the forwarder work: one
// audit line of its own.
const checkDestination = "bulkhead-check.invalid:1"

// egressBundle is a bundle running sleep whose rootfs also has curl and
// the test host's certificate, for HTTPS through the broker.
func egressBundle(t *testing.T, h egressHost) string {
	t.Helper()
	b := bundle.New(t, []string{"sleep", "3600"})
	rootfs := filepath.Join(b, "rootfs")
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.AddProgram(rootfs, curl); err != nil {
		t.Fatal(err)
	}
	cert, err := os.ReadFile(h.cert)
	if err == nil {
		err = os.WriteFile(filepath.Join(rootfs, "etc/test-host.pem"), cert, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The job reaches an allowlisted name through the broker and nothing else,
// on runc and on runsc: HTTP and HTTPS (CONNECT) to the listed test host
// by name; another name gets 403 with the reason; a direct TCP connect
// and a UDP send meet the empty namespace (gVisor's, on runsc); a listed
// name that resolves to loopback or to the cloud metadata address is
// refused. The broker runs unprivileged, outside the container; each
// connection is one audit line, and delete takes the broker away.
func TestEgressBroker(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend, "ip", "unshare", "openssl", "curl")
			testEgressBroker(t, backend)
		})
	}
}

func testEgressBroker(t *testing.T, backend string) {
	env := newEgressEnv(t, backend, "egress-"+backend, "")
	b := egressBundle(t, env.host)
	if r := createWithHosts(t, env.hosts, append(env.g, "create", "--bundle", b, env.id)...); r.code != 0 {
		t.Fatalf("create: exit %d\n%s", r.code, r.stderr)
	}
	t.Cleanup(func() { bulkhead(t, "", append(env.g, "delete", "--force", env.id)...) })
	pids := leftover.Brokers(env.id)
	if len(pids) != 1 {
		t.Fatalf("after create: brokers %v, want one", pids)
	}
	assertOutsideContainer(t, pids[0], env.root, env.g, env.id)
	assertUnprivileged(t, pids[0])
	must(t, append(env.g, "start", env.id)...)

	sh := func(script string) result {
		t.Helper()
		return bulkhead(t, "", append(env.g, "exec", env.id, "sh", "-c", script)...)
	}
	r := sh("wget -q -O- http://allowed.test/hello.txt")
	if r.code != 0 || r.stdout != "hello from the test host\n" {
		t.Fatalf("allowlisted name over HTTP through http_proxy: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	// curl asks https_proxy for a tunnel and checks the test host's
	// certificate for the name through it.
	r = sh("curl -sS --cacert /etc/test-host.pem https://allowed.test/hello.txt")
	if r.code != 0 || r.stdout != "hello from the test host\n" {
		t.Fatalf("allowlisted name over HTTPS through https_proxy: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if r = sh("wget -q -O- http://other.test/hello.txt"); r.code == 0 || !strings.Contains(r.stderr, "403") {
		t.Fatalf("name outside the list through wget: exit %d, stderr %q; want 403", r.code, r.stderr)
	}
	for name, reason := range map[string]string{
		"other.test":    "other.test:80 is not in the profile's egress list",
		"meta.test":     "meta.test resolves to 169.254.169.254, a link-local address",
		"loopback.test": "loopback.test resolves to 127.0.0.1, a loopback address",
	} {
		r = sh(fmt.Sprintf(`printf 'GET http://%s/hello.txt HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' | nc 127.0.0.1 3128`, name, name))
		if status, _, _ := strings.Cut(r.stdout, "\r\n"); !strings.HasSuffix(status, " 403 Forbidden") || !strings.Contains(r.stdout, reason) {
			t.Errorf("%s: %q, want 403 saying %q", name, r.stdout, reason)
		}
	}
	// Around the broker: no route to the test host, whose address the
	// profile lists, nor anywhere else, by TCP or UDP. Linux's empty
	// namespace answers ENETUNREACH, gVisor's netstack EHOSTUNREACH.
	unreachable := "Network is unreachable"
	if backend == "runsc" {
		unreachable = "No route to host"
	}
	for _, dst := range []string{env.host.addr, env.host.hostAddr, "1.1.1.1"} {
		r = sh("nc -w 2 " + dst + " 80 </dev/null")
		if r.code == 0 || !strings.Contains(r.stderr, unreachable) {
			t.Errorf("direct TCP connect to %s: exit %d, stderr %q; want %q", dst, r.code, r.stderr, unreachable)
		}
		// busybox nc has no UDP: nslookup's query is one datagram.
		r = sh("nslookup allowed.test " + dst)
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, unreachable) {
			t.Errorf("UDP send to %s: exit %d, output %q; want %q", dst, r.code, r.stdout+r.stderr, unreachable)
		}
	}

	if backend == "runsc" {
		// The forwarder is egress_broker_user's: the job can neither
		// signal it nor connect to the broker's socket past it.
		if r = sh("kill -9 $(pidof egress-forward)"); r.code == 0 || !strings.Contains(r.stderr, "Operation not permitted") {
			t.Errorf("job killing the forwarder: exit %d, stderr %q; want EPERM", r.code, r.stderr)
		}
		// gVisor's status has no NoNewPrivs line.
		r = sh(`grep -E '^(Uid|CapEff|CapBnd|Seccomp):' /proc/$(pidof egress-forward)/status`)
		for _, want := range []string{"Uid:\t65532\t65532\t65532\t65532", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "Seccomp:\t2"} {
			if !strings.Contains(r.stdout, want+"\n") {
				t.Errorf("the forwarder in the sandbox: %q (stderr %q), want %q", r.stdout, r.stderr, want)
			}
		}
		// The broker's socket is never in the sandbox's view: the
		// forwarder's way to it is a stream bulkhead donated.
		if r = sh("ls -a /.bulkhead"); r.code != 0 || strings.Contains(r.stdout, "egress.sock") || strings.Contains(r.stdout, "egress\n") {
			t.Errorf("the sandbox's /.bulkhead: exit %d, %q; want the forwarder alone, no socket", r.code, r.stdout)
		}
	}

	want := 6 // wget, curl, wget other.test, three raw requests
	if backend == "runsc" {
		want++
	}
	lines := waitEgressLines(t, env.audit, env.id, want)
	var allowed, denied, checks int
	for _, l := range lines {
		switch {
		case l["destination"] == checkDestination:
			checks++
		case l["outcome"] == "allowed":
			allowed++
			if !strings.HasPrefix(l["address"].(string), env.host.addr+":") || l["bytes_received"].(float64) == 0 || l["bytes_sent"].(float64) == 0 {
				t.Errorf("allowed line %v, want the test host's address and bytes both ways", l)
			}
		case l["outcome"] == "denied":
			denied++
			if l["error"] == "" || l["destination"] == "" {
				t.Errorf("denied line %v, want the destination and the reason", l)
			}
		}
	}
	if allowed != 2 || denied != 4 || checks != want-6 || len(lines) != want {
		t.Fatalf("audit: %d allowed, %d denied and %d start-check lines of %d, want 2, 4 and %d (wget, curl; wget other.test and three raw requests):\n%v",
			allowed, denied, checks, len(lines), want-6, lines)
	}

	must(t, append(env.g, "delete", "--force", env.id)...)
	if pids := leftover.Brokers(env.id); len(pids) != 0 {
		t.Fatalf("after delete: brokers %v still running", pids)
	}
	assertGone(t, env.root, backend, env.id)
}

// assertOutsideContainer checks that the broker is in none of the
// container's namespaces or its cgroup: the job can neither signal it
// nor count it against its limits.
func assertOutsideContainer(t *testing.T, broker int, root string, g []string, id string) {
	t.Helper()
	init := containerState(t, g, id).Pid
	namespaces := []string{"net", "pid", "mnt", "ipc", "uts", "cgroup"}
	if slices.Contains(g, "runsc") {
		// gVisor's sandbox process stays in the host's pid and cgroup
		// namespaces: its kernel makes the container's own.
		namespaces = []string{"net", "mnt", "ipc", "uts"}
	}
	for _, ns := range namespaces {
		theirs, err1 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", init, ns))
		ours, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", broker, ns))
		if err1 != nil || err2 != nil || theirs == ours {
			t.Errorf("broker %d %s namespace %q, container init %d %q (%v, %v): want a different one", broker, ns, ours, init, theirs, err1, err2)
		}
	}
	cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", broker))
	if strings.Contains(string(cg), "/bulkhead/") {
		t.Errorf("broker %d is in a container's cgroup:\n%s", broker, cg)
	}
	_ = root
}

// assertUnprivileged checks every thread of the broker: it parses the
// job's HTTP, so it holds no root, group, capability or way to gain one,
// and it runs under its seccomp filter. The uid is also not the job's.
func assertUnprivileged(t *testing.T, pid int) {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads of broker %d: %v", pid, err)
	}
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			t.Fatal(err)
		}
		status := map[string]string{}
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				status[k] = strings.Join(strings.Fields(v), " ")
			}
		}
		want := map[string]string{
			"Uid": "65532 65532 65532 65532", "Gid": "65532 65532 65532 65532", "Groups": "",
			"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
			"CapBnd": "0000000000000000", "CapAmb": "0000000000000000",
			"NoNewPrivs": "1", "Seccomp": "2",
		}
		for k, v := range want {
			if got, ok := status[k]; !ok || got != v {
				t.Errorf("broker %d thread %s: %s %q, want %q", pid, task.Name(), k, got, v)
			}
		}
	}
}

// A create whose broker cannot listen fails, and leaves no broker, no
// container and no record behind. A createRuntime hook, which runs after
// the sandbox exists and before the broker starts, takes the broker's
// place: on runc the port in the container's network namespace, on runsc
// the socket's name in the container's state directory (beside the
// bundle bulkhead hands runsc).
func TestEgressBrokerFailedCreate(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend, "ip", "unshare", "nsenter", "openssl", "curl")
			testEgressBrokerFailedCreate(t, backend)
		})
	}
}

func testEgressBrokerFailedCreate(t *testing.T, backend string) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "squatter.pid")
	hook := filepath.Join(dir, "take-place.sh")
	script := fmt.Sprintf(`#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
pid=$(%[1]s sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
setsid nsenter --net=/proc/$pid/ns/net %[1]s httpd -f -p 127.0.0.1:3128 -h / </dev/null >/dev/null 2>&1 &
echo $! > %[2]s
for i in $(seq 50); do nsenter --net=/proc/$pid/ns/net %[1]s netstat -ltn | grep -q ':3128 ' && exit 0; sleep 0.1; done
exit 1
`, bundle.Busybox, pidFile)
	want := "address already in use"
	if backend == "runsc" {
		script = `#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
bundle=$(sed -n 's/.*"bundle": *"\([^"]*\)".*/\1/p')
touch "$(dirname "$bundle")/egress.sock"
`
	}
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if data, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	env := newEgressEnv(t, backend, "egress-fail-"+backend, fmt.Sprintf("hooks_allowed = [%q]\n", hook))
	b := bundle.New(t, []string{"sleep", "3600"}, func(s *rspec.Spec) {
		s.Hooks = &rspec.Hooks{CreateRuntime: []rspec.Hook{{Path: hook}}}
	})
	r := createWithHosts(t, env.hosts, append(env.g, "create", "--bundle", b, env.id)...)
	if r.code == 0 {
		bulkhead(t, "", append(env.g, "delete", "--force", env.id)...)
		t.Fatalf("create succeeded with the broker's place taken")
	}
	if !strings.Contains(r.stderr, "egress") || !strings.Contains(r.stderr, want) {
		t.Fatalf("create: exit %d, stderr %q; want the broker's failure to listen (%s)", r.code, r.stderr, want)
	}
	if pids := leftover.Brokers(env.id); len(pids) != 0 {
		t.Fatalf("after a failed create: brokers %v still running", pids)
	}
	assertGone(t, env.root, backend, env.id)
	var refused bool
	for _, e := range auditEvents(t, env.audit) {
		if e["event"] == "create" && e["id"] == env.id && e["outcome"] == "refused" {
			refused = true
		}
	}
	if !refused {
		t.Fatalf("no refused create of %s in the audit log", env.id)
	}
}

// On runsc, start connects to the broker's socket, hands the stream to the
// forwarder and asks the broker from inside the sandbox, through it; a
// path that is not there fails the start and kills the container: here
// the broker's socket is gone between create and start.
func TestEgressRunscPathMissing(t *testing.T) {
	needRoot(t, "runsc", "ip", "unshare", "openssl", "curl")
	env := newEgressEnv(t, "runsc", "egress-nopath", "")
	b := bundle.New(t, []string{"sleep", "3600"})
	if r := createWithHosts(t, env.hosts, append(env.g, "create", "--bundle", b, env.id)...); r.code != 0 {
		t.Fatalf("create: exit %d\n%s", r.code, r.stderr)
	}
	t.Cleanup(func() { bulkhead(t, "", append(env.g, "delete", "--force", env.id)...) })
	if err := os.Remove(filepath.Join(env.root, "bulkhead", env.id, "egress.sock")); err != nil {
		t.Fatal(err)
	}
	r := bulkhead(t, "", append(env.g, "start", env.id)...)
	if r.code == 0 || !strings.Contains(r.stderr, "control egress") || !strings.Contains(r.stderr, "killed") {
		t.Fatalf("start without the broker's socket: exit %d, stderr %q; want the egress control failing and the container killed", r.code, r.stderr)
	}
	if s := containerState(t, env.g, env.id); s.Status != "stopped" {
		t.Fatalf("after the failed start: %+v, want stopped", s)
	}
	if lines := egressLines(t, env.audit, env.id); len(lines) != 0 {
		t.Fatalf("the broker saw connections with its socket gone: %v", lines)
	}
	must(t, append(env.g, "delete", "--force", env.id)...)
	if pids := leftover.Brokers(env.id); len(pids) != 0 {
		t.Fatalf("after delete: brokers %v still running", pids)
	}
	assertGone(t, env.root, "runsc", env.id)
}

// run is create and start in one: the broker and, on runsc, the
// forwarder are there when it returns.
func TestEgressRun(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend, "ip", "unshare", "openssl", "curl")
			env := newEgressEnv(t, backend, "egress-run-"+backend, "")
			b := bundle.New(t, []string{"sleep", "3600"})
			if r := createWithHosts(t, env.hosts, append(env.g, "run", "--detach", "--bundle", b, env.id)...); r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			t.Cleanup(func() { bulkhead(t, "", append(env.g, "delete", "--force", env.id)...) })
			r := bulkhead(t, "", append(env.g, "exec", env.id, "wget", "-q", "-O-", "http://allowed.test/hello.txt")...)
			if r.code != 0 || r.stdout != "hello from the test host\n" {
				t.Fatalf("allowlisted name after run: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
			}
			must(t, append(env.g, "delete", "--force", env.id)...)
			if pids := leftover.Brokers(env.id); len(pids) != 0 {
				t.Fatalf("after delete: brokers %v still running", pids)
			}
		})
	}
}

// The broker dies with its container when the watchdog's deadline kills
// it, as it does at delete: it holds the container's init, not a record.
func TestEgressBrokerGoneAfterDeadline(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend, "ip", "unshare", "openssl", "curl")
			env := newEgressEnv(t, backend, "egress-deadline-"+backend, "max_lifetime = \"3s\"\n")
			b := bundle.New(t, []string{"sleep", "3600"})
			if r := createWithHosts(t, env.hosts, append(env.g, "create", "--bundle", b, env.id)...); r.code != 0 {
				t.Fatalf("create: exit %d\n%s", r.code, r.stderr)
			}
			t.Cleanup(func() { bulkhead(t, "", append(env.g, "delete", "--force", env.id)...) })
			if pids := leftover.Brokers(env.id); len(pids) != 1 {
				t.Fatalf("after create: brokers %v, want one", pids)
			}
			must(t, append(env.g, "start", env.id)...)
			// Waiting for events, not timing them: the watchdog's kill, then
			// the broker's exit.
			for end := time.Now().Add(30 * time.Second); containerState(t, env.g, env.id).Status != "stopped"; time.Sleep(100 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("%s not stopped 30 s after start with a 3 s lifetime", env.id)
				}
			}
			for end := time.Now().Add(20 * time.Second); len(leftover.Brokers(env.id)) != 0; time.Sleep(100 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("brokers %v of %s still running 20 s after the deadline killed it", leftover.Brokers(env.id), env.id)
				}
			}
		})
	}
}

// auditEvents reads every line of the audit log.
func auditEvents(t *testing.T, audit string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(audit)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// waitEgressLines waits for n egress lines of id: the broker writes a
// line when the connection ends, which may be after the job has its
// answer.
func waitEgressLines(t *testing.T, audit, id string, n int) []map[string]any {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		lines := egressLines(t, audit, id)
		if len(lines) >= n || time.Now().After(deadline) {
			return lines
		}
	}
}

// On runsc a host socket that appears, after start, in a directory the
// container binds or in its root filesystem, mode 0777, stays out of the
// job's reach with egress as without: the way to the broker is a donated
// stream, not the gofer's --host-uds, which would connect the job to any
// socket its filesystem shows, as host root. (Under runc the kernel lets
// the sandbox user connect to such a socket, as any local user could; see
// the README's host mounts.)
func TestEgressHostSocketsStayClosed(t *testing.T) {
	for _, backend := range []string{"runsc"} {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend, "ip", "unshare", "openssl", "curl")
			env := newEgressEnv(t, backend, "egress-uds-"+backend, "")
			share := t.TempDir()
			if err := os.Chmod(share, 0o755); err != nil {
				t.Fatal(err)
			}
			b := egressBundle(t, env.host)
			s, err := bundle.Read(b)
			if err != nil {
				t.Fatal(err)
			}
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/share", Type: "bind", Source: share, Options: []string{"rbind", "ro"}})
			if err := bundle.Write(b, s); err != nil {
				t.Fatal(err)
			}
			if r := createWithHosts(t, env.hosts, append(env.g, "create", "--bundle", b, env.id)...); r.code != 0 {
				t.Fatalf("create: exit %d\n%s", r.code, r.stderr)
			}
			t.Cleanup(func() { bulkhead(t, "", append(env.g, "delete", "--force", env.id)...) })
			must(t, append(env.g, "start", env.id)...)

			var reached atomic.Int32
			for _, path := range []string{filepath.Join(share, "late.sock"), filepath.Join(b, "rootfs", "tmp-late.sock")} {
				ln, err := net.Listen("unix", path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ln.Close() })
				if err := os.Chmod(path, 0o777); err != nil {
					t.Fatal(err)
				}
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						reached.Add(1)
						c.Close()
					}
				}()
			}
			for _, inside := range []string{"/share/late.sock", "/tmp-late.sock"} {
				r := bulkhead(t, "", append(env.g, "exec", env.id, "curl", "-sS", "--unix-socket", inside, "http://x/")...)
				if r.code != 7 {
					t.Errorf("job connecting to the host socket at %s: exit %d, stderr %q; want curl's 7, no connection", inside, r.code, r.stderr)
				}
			}
			if n := reached.Load(); n != 0 {
				t.Fatalf("the host's sockets accepted %d connections from the sandbox", n)
			}
		})
	}
}
