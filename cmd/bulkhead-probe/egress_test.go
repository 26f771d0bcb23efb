package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/runtime/egress"
	"bulkhead.dev/bulkhead/runtime/probe/protocol"
	"bulkhead.dev/bulkhead/specs"
)

// startBroker runs bulkhead's own egress broker on a loopback port with
// the given list, for as long as the test runs.
func startBroker(t *testing.T, allow ...string) string {
	t.Helper()
	entries, err := specs.ParseEgress(allow)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &egress.Broker{Allow: entries, MaxConns: 4, Audit: func(egress.Connection) {}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = b.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// The egress steps judge the broker's real answers: 200 for a listed
// destination, 403 with the broker's header for another; and fail on
// anything else, including a 403 that is not the broker's.
func TestEgressStepsAgainstTheBroker(t *testing.T) {
	dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer dest.Close()
	destAddr := strings.TrimPrefix(dest.URL, "http://")
	proxy := startBroker(t, destAddr)

	if s := connectAllowed(proxy, destAddr); !s.pass || s.layer != protocol.LayerEgressBroker {
		t.Errorf("listed destination: %+v, want 200 through the broker", s)
	}
	s := connectDenied(proxy, "denied.bulkhead.invalid:80")
	if !s.pass || s.observed != "403" || s.layer != protocol.LayerEgressBroker || !strings.Contains(s.detail, "not in the profile's egress list") {
		t.Errorf("destination outside the list: %+v, want 403 from the broker with its reason", s)
	}
	// Turned around, each step must fail.
	if s := connectAllowed(proxy, "denied.bulkhead.invalid:80"); s.pass || s.observed != "403" || !strings.Contains(s.detail, "not in the profile's egress list") {
		t.Errorf("allowed step on a denied destination: %+v, want a failure with 403 and the broker's reason", s)
	}
	if s := connectDenied(proxy, destAddr); s.pass {
		t.Errorf("denied step on a listed destination: %+v, want a failure", s)
	}
	// A 403 from something that is not the broker is no evidence.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer other.Close()
	if s := connectDenied(strings.TrimPrefix(other.URL, "http://"), "denied.bulkhead.invalid:80"); s.pass {
		t.Errorf("403 from another server: %+v, want a failure", s)
	}
	// Nothing listening: an error, not a pass.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	if s := connectAllowed(closed, destAddr); s.pass || s.observed != "ECONNREFUSED" {
		t.Errorf("no broker: %+v, want ECONNREFUSED and a failure", s)
	}
}

// In the host's namespace a direct connection and a DNS query are no
// evidence of a boundary; the steps must say so.
func TestEgressStepsFailWithARoute(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if s := directConnect(ln.Addr().String(), false); s.pass || s.observed != "connected" {
		t.Errorf("direct connect to a listening port: %+v, want a failure", s)
	}
	// A DNS server that answers: a UDP socket echoing the query.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 512)
		n, from, err := pc.ReadFrom(buf)
		if err == nil {
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
	if o, ok := dnsQuery(pc.LocalAddr().String(), "example.org", false); ok || !strings.HasPrefix(o, "answered") {
		t.Errorf("DNS query to a server that answers: %q %v, want a failure", o, ok)
	}
	// A server that never answers: silence is no evidence.
	quiet, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	if o, ok := dnsQuery(quiet.LocalAddr().String(), "example.org", false); ok || o != "timeout" {
		t.Errorf("DNS query to a silent server: %q %v, want a timeout and a failure", o, ok)
	}
	// Nothing listening on a loopback port: the kernel's ECONNREFUSED.
	free, _ := net.ListenPacket("udp", "127.0.0.1:0")
	addr := free.LocalAddr().String()
	free.Close()
	if o, ok := dnsQuery(addr, "example.org", false); !ok || o != "ECONNREFUSED" {
		t.Errorf("DNS query to a loopback port without a server: %q %v, want ECONNREFUSED", o, ok)
	}
}

func TestDNSPacket(t *testing.T) {
	got := dnsPacket("a.bc")
	want := []byte{0xb4, 0x1d, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'a', 2, 'b', 'c', 0, 0, 1, 0, 1}
	if string(got) != string(want) {
		t.Fatalf("dnsPacket(a.bc) = %v, want %v", got, want)
	}
}
