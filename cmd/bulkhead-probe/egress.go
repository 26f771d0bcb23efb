package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// proxyAddr is where bulkhead's egress broker listens in the sandbox's
// network namespace (specs.EgressProxyAddr; the probe imports only the
// protocol, to stay a small static binary).
const proxyAddr = "127.0.0.1:3128"

// dnsDefault is the resolver glibc and musl fall back to without a
// nameserver line: the namespace's own loopback.
const dnsDefault = "127.0.0.1:53"

// egressStep is one attempt of the egress control.
type egressStep struct {
	name, observed, layer, detail string
	pass                          bool
}

// checkEgress: the only way out of the sandbox is the egress broker, and
// only to what the profile lists. With -egress-allow (the host passes it
// when the profile lists egress): the allowed destination answers through
// the broker (200 to CONNECT), a destination outside the list gets 403
// from the broker itself (its X-Bulkhead-Egress header), a direct
// connection meets the empty namespace (ENETUNREACH) and a DNS query finds
// no server. Without it: nothing listens on the broker's address, a
// direct connection fails the same way and DNS finds no server. Every step
// needs an answer: a timeout or silence fails it.
//
// As for the network control, nothing is sent when an interface other
// than lo exists.
func checkEgress(env *probeEnv) Result {
	r := Result{Attempt: "without egress: connect to the broker's address " + proxyAddr + ", direct TCP connect, DNS query"}
	if env.egressAllow != "" {
		r.Attempt = fmt.Sprintf("CONNECT %s (listed) and %s (not listed) through HTTP_PROXY; direct TCP connect to %s; DNS query",
			env.egressAllow, env.egressDeny, env.egressDirect)
	}
	ifs, _, err := interfaces()
	for _, n := range ifs {
		if n != "lo" {
			err = fmt.Errorf("interface %s besides lo", n)
		}
	}
	if err != nil {
		r.Observed, r.Layer = "not tried", protocol.LayerNone
		r.Detail = "interfaces " + strings.Join(ifs, ",") + ": " + errName(err) + "; not an empty network namespace, nothing sent"
		return r
	}

	var steps []egressStep
	name := "example.org"
	direct := env.netTarget
	if env.egressAllow != "" {
		proxy, perr := proxyFromEnv()
		if perr != nil {
			steps = append(steps, egressStep{name: "proxy", observed: "no proxy", layer: protocol.LayerNone, detail: perr.Error()})
		} else {
			steps = append(steps, connectAllowed(proxy, env.egressAllow), connectDenied(proxy, env.egressDeny))
		}
		name, _, _ = net.SplitHostPort(env.egressAllow)
		direct = env.egressDirect
	} else {
		steps = append(steps, noBroker())
	}
	steps = append(steps, directConnect(direct, env.gvisor), dnsLookup(name, env.gvisor))

	r.Pass = true
	var obs, layers, details []string
	for _, s := range steps {
		obs = append(obs, s.name+" "+s.observed)
		if !slices.Contains(layers, s.layer) {
			layers = append(layers, s.layer)
		}
		d := s.name + ": " + s.observed
		if s.detail != "" {
			d += " (" + s.detail + ")"
		}
		details = append(details, d)
		r.Pass = r.Pass && s.pass
	}
	r.Observed, r.Layer, r.Detail = strings.Join(obs, "; "), strings.Join(layers, ", "), strings.Join(details, "; ")
	if env.egressAllow == "" {
		r.Observed = "no egress: " + r.Observed
	}
	return r
}

// proxyFromEnv is the broker's address as the egress rule told the job's
// HTTP clients, which must be bulkhead's.
func proxyFromEnv() (string, error) {
	v := os.Getenv("HTTP_PROXY")
	if v == "" {
		return "", fmt.Errorf("HTTP_PROXY is not set: the job's clients would not find the broker")
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "http" || u.Host != proxyAddr {
		return "", fmt.Errorf("HTTP_PROXY %q is not the broker at http://%s", v, proxyAddr)
	}
	return u.Host, nil
}

// connectStatus sends CONNECT dest to the proxy and returns the status
// line and the headers of its answer; conn stays open for the caller.
func connectStatus(proxy, dest string, wait time.Duration) (net.Conn, string, map[string]string, string, error) {
	conn, err := net.DialTimeout("tcp", proxy, 2*time.Second)
	if err != nil {
		return nil, "", nil, "", err
	}
	_ = conn.SetDeadline(time.Now().Add(wait))
	if _, err := fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest); err != nil {
		conn.Close()
		return nil, "", nil, "", err
	}
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil {
		conn.Close()
		return nil, "", nil, "", err
	}
	headers := map[string]string{}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			headers[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	status = strings.TrimSpace(status)
	if statusCode(status) == "200" {
		// An open tunnel: what follows is the destination's, if anything.
		return conn, status, headers, "", nil
	}
	body, _ := br.ReadString('\n')
	return conn, status, headers, strings.TrimSpace(body), nil
}

// statusCode is the code of an HTTP status line ("HTTP/1.1 403 Forbidden").
func statusCode(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") {
		return ""
	}
	return f[1]
}

// connectAllowed: the broker opens a tunnel to a listed destination,
// which it answers 200 only after the destination accepted the
// connection.
func connectAllowed(proxy, dest string) egressStep {
	s := egressStep{name: "allowed " + dest}
	conn, status, _, body, err := connectStatus(proxy, dest, 15*time.Second)
	if err != nil {
		s.observed, s.layer, s.detail = errName(err), protocol.LayerNone, "no answer from the broker at "+proxy
		return s
	}
	conn.Close()
	if statusCode(status) != "200" {
		s.observed, s.layer = statusCode(status), protocol.LayerEgressBroker
		// The broker's one line says why (a listed name that resolves
		// to a refused address, say), which the status alone hides.
		s.detail = "the broker did not open a listed destination: " + status
		if body != "" {
			s.detail += ": " + body
		}
		return s
	}
	s.observed, s.layer, s.pass = "200 through the broker", protocol.LayerEgressBroker, true
	return s
}

// connectDenied: a destination outside the list gets 403 from the broker
// itself, its header and its one line saying so.
func connectDenied(proxy, dest string) egressStep {
	s := egressStep{name: "denied " + dest}
	conn, status, headers, body, err := connectStatus(proxy, dest, 5*time.Second)
	if err != nil {
		s.observed, s.layer, s.detail = errName(err), protocol.LayerNone, "no answer from the broker at "+proxy
		return s
	}
	conn.Close()
	s.observed, s.detail = statusCode(status), body
	if s.observed == "" {
		s.observed = status
	}
	if s.observed == "403" && headers["x-bulkhead-egress"] == "denied" && strings.HasPrefix(body, "bulkhead egress broker:") {
		s.layer, s.pass = protocol.LayerEgressBroker, true
		return s
	}
	s.layer = protocol.LayerNone
	s.detail = "want 403 from the egress broker, got " + status + " " + body
	return s
}

// noBroker: without egress nothing listens on the broker's address.
func noBroker() egressStep {
	s := egressStep{name: "proxy " + proxyAddr}
	conn, err := net.DialTimeout("tcp", proxyAddr, 2*time.Second)
	if conn != nil {
		conn.Close()
		s.observed, s.layer, s.detail = "connected", protocol.LayerNone, "something listens on the broker's address though the profile has no egress"
		return s
	}
	s.observed = errName(err)
	if isErrno(err, unix.ECONNREFUSED) {
		s.observed, s.layer, s.pass = "no proxy (ECONNREFUSED)", protocol.LayerNetns, true
		return s
	}
	s.layer = protocol.LayerNone
	return s
}

// directConnect: around the broker there is no route.
func directConnect(dest string, gvisor bool) egressStep {
	s := egressStep{name: "direct " + dest}
	conn, err := (&net.Dialer{Timeout: time.Second}).Dial("tcp", dest)
	if conn != nil {
		conn.Close()
		s.observed, s.layer, s.detail = "connected", protocol.LayerNone, "a route around the broker exists"
		return s
	}
	s.observed = errName(err)
	switch {
	case isErrno(err, unix.ENETUNREACH):
		s.layer, s.pass = protocol.LayerNetns, true
	case isErrno(err, unix.EHOSTUNREACH) && gvisor:
		s.layer, s.pass = LayerGVisor, true
	default:
		s.layer = protocol.LayerNone
	}
	return s
}

// dnsLookup sends an A query for name to every nameserver the sandbox's
// resolv.conf names (or the loopback resolver without one): none may
// answer. No route (ENETUNREACH) or nothing listening on the loopback
// (ECONNREFUSED) is the evidence; silence is not.
func dnsLookup(name string, gvisor bool) egressStep {
	s := egressStep{name: "DNS " + name, pass: true}
	servers := nameservers()
	var obs []string
	for _, srv := range servers {
		o, ok := dnsQuery(srv, name, gvisor)
		obs = append(obs, srv+" "+o)
		s.pass = s.pass && ok
	}
	s.observed = "no server"
	s.layer = protocol.LayerNetns
	if !s.pass {
		s.observed, s.layer = "a server answered or stayed silent", protocol.LayerNone
	}
	s.detail = strings.Join(obs, ", ")
	return s
}

func nameservers() []string {
	var out []string
	if data, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "nameserver" && net.ParseIP(f[1]) != nil && len(out) < 3 {
				out = append(out, net.JoinHostPort(f[1], "53"))
			}
		}
	}
	if len(out) == 0 {
		out = []string{dnsDefault}
	}
	return out
}

// dnsQuery sends one query and says what came back and whether that is
// the evidence of no server.
func dnsQuery(server, name string, gvisor bool) (string, bool) {
	conn, err := net.Dial("udp", server)
	if err == nil {
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		if _, err = conn.Write(dnsPacket(name)); err == nil {
			buf := make([]byte, 512)
			var n int
			if n, err = conn.Read(buf); err == nil {
				return fmt.Sprintf("answered (%d bytes)", n), false
			}
		}
	}
	switch {
	case isErrno(err, unix.ENETUNREACH), isErrno(err, unix.ECONNREFUSED):
		return errName(err), true
	case isErrno(err, unix.EHOSTUNREACH) && gvisor:
		return errName(err), true
	}
	return errName(err), false
}

// dnsPacket is a DNS query for the A record of name, recursion desired.
func dnsPacket(name string) []byte {
	p := []byte{0xb4, 0x1d, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if label == "" || len(label) > 63 {
			continue
		}
		p = append(p, byte(len(label)))
		p = append(p, label...)
	}
	p = append(p, 0)
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(p, 1), 1)
}
