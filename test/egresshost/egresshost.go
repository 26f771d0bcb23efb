// Package egresshost gives the engine and job tests a host to reach
// through the egress broker: a network namespace the test makes, joined
// to the machine by a veth pair, with its own private address; servers the
// test runs in-process listen there. Names reach the broker through a
// hosts file that only bulkhead's own mount namespace sees.
package egresshost

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Host is one test host.
type Host struct {
	NS       string
	HostAddr string // the machine's end of the veth
	Addr     string // the test host's address
}

var seq atomic.Int32

// New makes a test host and removes it when the test ends. Its /24 is
// private (10.214.N.0/24), so the broker refuses it for a name unless the
// profile lists the address, as an operator does for an internal mirror.
func New(t *testing.T) *Host {
	t.Helper()
	k := int(seq.Add(1))
	n := freeSubnet(t, (os.Getpid()*3+k)%250+3)
	tag := fmt.Sprintf("%d-%d", os.Getpid(), k)
	h := &Host{NS: "bh-eh-" + tag, HostAddr: fmt.Sprintf("10.214.%d.1", n), Addr: fmt.Sprintf("10.214.%d.2", n)}
	veth := fmt.Sprintf("bheh%d", (os.Getpid()*10+k)%10000000)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", h.NS)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", h.NS).Run() })
	ip("link", "add", veth+"h", "type", "veth", "peer", "name", veth+"c")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", veth+"h").Run() })
	ip("link", "set", veth+"c", "netns", h.NS)
	ip("addr", "add", h.HostAddr+"/24", "dev", veth+"h")
	ip("link", "set", veth+"h", "up")
	ip("-n", h.NS, "addr", "add", h.Addr+"/24", "dev", veth+"c")
	ip("-n", h.NS, "link", "set", veth+"c", "up")
	ip("-n", h.NS, "link", "set", "lo", "up")
	return h
}

// freeSubnet is the first 10.214.N.0/24 from n on that no interface of
// the machine has an address in: tests running beside each other (other
// packages, other people's) must not share a route.
func freeSubnet(t *testing.T, n int) int {
	t.Helper()
	out, err := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip addr show: %v", err)
	}
	for i := 0; i < 250; i++ {
		m := (n-3+i)%250 + 3
		if !strings.Contains(string(out), fmt.Sprintf(" 10.214.%d.", m)) {
			return m
		}
	}
	t.Fatal("no free subnet in 10.214.0.0/16")
	return 0
}

// Listen opens a TCP listener on the test host's address: one locked
// thread enters its namespace, makes the socket and comes back, and the
// socket stays in the namespace it was made in.
func (h *Host) Listen(t *testing.T, port int) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		goruntime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			done <- result{err: err}
			return
		}
		defer home.Close()
		target, err := os.Open("/run/netns/" + h.NS)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: err}
			return
		}
		ln, lerr := net.Listen("tcp", net.JoinHostPort(h.Addr, fmt.Sprint(port)))
		if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and dies with this goroutine.
			done <- result{err: err}
			return
		}
		goruntime.UnlockOSThread()
		done <- result{ln, lerr}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("listen on %s:%d in %s: %v", h.Addr, port, h.NS, r.err)
	}
	return r.ln
}

// Serve serves handler on port, over TLS when cert is not nil, until the
// test ends, and checks from the machine that it answers.
func (h *Host) Serve(t *testing.T, port int, handler http.Handler, cert *tls.Certificate) {
	t.Helper()
	ln := h.Listen(t, port)
	// The readiness check below is no TLS client: its handshake error is
	// no news.
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: time.Minute, ErrorLog: log.New(io.Discard, "", 0)}
	if cert != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cert}}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatalf("test host %s does not answer: %v", ln.Addr(), err)
	}
	c.Close()
}

// CA is a certificate authority made for one test, and a server
// certificate it signed for the test host's names.
type CA struct {
	PEM    []byte // the CA's certificate, for the clients
	Server tls.Certificate
}

// NewCA makes a CA and a server certificate for names.
func NewCA(t *testing.T, names ...string) *CA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bulkhead test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Server: tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}}
}

// HostsFile writes a hosts file that maps each name to the test host's
// address, after localhost.
func (h *Host) HostsFile(t *testing.T, names ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hosts")
	body := "127.0.0.1 localhost\n" + h.Addr + " " + strings.Join(names, " ") + "\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Runtime writes an executable that an engine calls as its runtime: it
// runs bulkhead, with args before the engine's own, in a mount namespace
// of its own where hosts is /etc/hosts. The broker bulkhead starts stays
// in that namespace and resolves the test's names through the machine's
// ordinary resolver (files, then DNS), the one it uses in production; the
// machine's own /etc/hosts, which other people's work shares, is never
// touched.
func Runtime(t *testing.T, hosts, bulkhead string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "bulkhead-hosts")
	WriteRuntime(t, p, hosts, bulkhead, args...)
	return p
}

// WriteRuntime writes Runtime's executable at path, where an engine's
// configuration already names it, and removes it when the test ends.
func WriteRuntime(t *testing.T, path, hosts, bulkhead string, args ...string) {
	t.Helper()
	quoted := make([]string, 0, len(args)+2)
	for _, a := range append([]string{hosts, bulkhead}, args...) {
		quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	script := "#!/bin/sh\nexec unshare --mount --propagation private sh -c 'mount --bind \"$0\" /etc/hosts && exec \"$@\"' " +
		strings.Join(quoted, " ") + " \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
}

// Names are the names the engine tests map to the test host: Allowed is
// in the profile's egress list, Other is not.
const (
	Allowed = "allowed.test"
	Other   = "other.test"
)

// Egress is the egress list of the engine tests' profile: the allowed
// name on port 80, and the test host's address, which the broker needs
// listed because it is private.
func (h *Host) Egress() string {
	return fmt.Sprintf("egress = [%q, %q]\n", Allowed+":80", h.Addr+":80")
}

// InstallConfig writes a bulkhead configuration whose install profile
// lists h (Egress) and takes the extra keys given, and whose audit log is
// its own, and returns both paths.
func (h *Host) InstallConfig(t *testing.T, extra ...string) (config, audit string) {
	t.Helper()
	dir := t.TempDir()
	config, audit = filepath.Join(dir, "config.toml"), filepath.Join(dir, "audit.jsonl")
	body := fmt.Sprintf("audit_log = %q\n[profiles.install]\n%s%s", audit, h.Egress(), strings.Join(extra, ""))
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return config, audit
}

// ServeHello serves "hello from the test host" at /hello.txt on port 80.
func (h *Host) ServeHello(t *testing.T) {
	t.Helper()
	h.Serve(t, 80, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hello.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, Hello)
	}), nil)
}

// Hello is what ServeHello answers.
const Hello = "hello from the test host\n"

// Script is a busybox shell script that tries each way out of the sandbox
// and prints each result after a "== name" line, for Judge.
func (h *Host) Script() string {
	raw := func(name string) string {
		return fmt.Sprintf(`printf 'GET http://%[1]s/hello.txt HTTP/1.1\r\nHost: %[1]s\r\nConnection: close\r\n\r\n' | nc 127.0.0.1 3128`, name)
	}
	return strings.Join([]string{
		"echo '== interfaces'; ls /sys/class/net",
		"echo '== proxy'; echo \"$http_proxy $https_proxy\"",
		"echo '== allowed'; wget -q -O- http://" + Allowed + "/hello.txt 2>&1; echo \"exit $?\"",
		"echo '== other'; wget -q -O- http://" + Other + "/hello.txt 2>&1; echo \"exit $?\"",
		"echo '== reason'; " + raw(Other),
		"echo '== direct'; nc -w 2 " + h.Addr + " 80 </dev/null 2>&1; echo \"exit $?\"",
		"echo '== end'",
	}, "\n")
}

// Judge checks the output of Script: only loopback, the proxy variables
// set, the allowed name answered through the broker, the other refused
// with 403 and the reason, and a direct connect unreachable.
func (h *Host) Judge(t *testing.T, out string) {
	t.Helper()
	parts := map[string]string{}
	for _, sec := range strings.Split(out, "== ")[1:] {
		name, body, _ := strings.Cut(sec, "\n")
		parts[name] = body
	}
	if _, ok := parts["end"]; !ok {
		t.Fatalf("the script did not finish:\n%s", out)
	}
	if got := strings.Fields(parts["interfaces"]); len(got) != 1 || got[0] != "lo" {
		t.Errorf("interfaces %q, want only lo", got)
	}
	if got := strings.TrimSpace(parts["proxy"]); got != "http://127.0.0.1:3128 http://127.0.0.1:3128" {
		t.Errorf("http_proxy and https_proxy %q, want the broker", got)
	}
	if got := parts["allowed"]; got != Hello+"exit 0\n" {
		t.Errorf("allowlisted name: %q, want the test host's answer", got)
	}
	if got := parts["other"]; !strings.Contains(got, "403") || strings.HasSuffix(got, "exit 0\n") {
		t.Errorf("name outside the list: %q, want wget to fail with 403", got)
	}
	reason := Other + ":80 is not in the profile's egress list"
	if got := parts["reason"]; !strings.HasPrefix(got, "HTTP/1.1 403 Forbidden") || !strings.Contains(got, reason) {
		t.Errorf("raw request for %s: %q, want 403 saying %q", Other, got, reason)
	}
	if got := parts["direct"]; !strings.Contains(got, "Network is unreachable") || strings.HasSuffix(got, "exit 0\n") {
		t.Errorf("direct connect to %s: %q, want ENETUNREACH", h.Addr, got)
	}
}
