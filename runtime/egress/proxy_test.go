package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/specs"
)

// testBroker serves a broker with a fixed name table on a loopback
// listener and returns its address and the audit lines it wrote.
func testBroker(t *testing.T, allow []string, names map[string]string, mutate ...func(*Broker)) (string, <-chan Connection) {
	t.Helper()
	entries, err := specs.ParseEgress(allow)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan Connection, 100)
	b := &Broker{Allow: entries, MaxConns: 8,
		Audit: func(c Connection) { lines <- c },
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			a, ok := names[host]
			if !ok {
				t.Errorf("broker resolved %s, which it had no reason to", host)
				return nil, fmt.Errorf("no such host")
			}
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		},
		HostLocal: func() ([]netip.Prefix, error) { return []netip.Prefix{netip.MustParsePrefix("203.0.114.77/32")}, nil },
	}
	for _, m := range mutate {
		m(b)
	}
	addr, stop := serveBroker(t, b)
	t.Cleanup(stop)
	return addr, lines
}

// serveBroker serves b on a loopback listener; stop ends it and returns
// once Serve has.
func serveBroker(t *testing.T, b *Broker) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = b.Serve(ctx, ln); close(done) }()
	return ln.Addr().String(), func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the broker did not end within 30 s")
		}
	}
}

func proxyClient(proxy string) *http.Client {
	u, _ := url.Parse("http://" + proxy)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}}
}

func TestBrokerAllowsListedName(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Host, r.URL.Path)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	// The test server is on loopback: only an entry naming the address lets
	// a name lead there.
	proxy, audit := testBroker(t, []string{fmt.Sprintf("allowed.test:%d", port), fmt.Sprintf("127.0.0.1:%d", port)},
		map[string]string{"allowed.test": "127.0.0.1"})
	resp, err := proxyClient(proxy).Get(fmt.Sprintf("http://allowed.test:%d/x", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != fmt.Sprintf("hello allowed.test:%d /x", port) {
		t.Fatalf("plain HTTP: %d %q", resp.StatusCode, body)
	}
	// CONNECT, as HTTPS clients do.
	conn, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\nGET /tunnel HTTP/1.0\r\nHost: allowed.test\r\n\r\n", port, port)
	all, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(all), "HTTP/1.1 200 Connection established") || !strings.Contains(string(all), "hello allowed.test /tunnel") {
		t.Fatalf("CONNECT: %q", all)
	}
	conn.Close()
	lines := waitLines(t, audit, 2)
	for _, l := range lines {
		if l.Verdict != "allowed" || l.Address != fmt.Sprintf("127.0.0.1:%d", port) || l.Sent == 0 || l.Received == 0 ||
			l.Entry != fmt.Sprintf("allowed.test:%d", port) {
			t.Errorf("audit %+v, want allowed to 127.0.0.1:%d by the entry allowed.test:%d, with bytes both ways", l, port, port)
		}
	}
}

// waitLines reads n audit lines. A line is written when its handler
// returns, which can be after the client has its answer.
func waitLines(t *testing.T, audit <-chan Connection, n int) []Connection {
	t.Helper()
	var out []Connection
	for len(out) < n {
		select {
		case c := <-audit:
			out = append(out, c)
		case <-time.After(30 * time.Second):
			t.Fatalf("audit lines %+v after 30 s, want %d", out, n)
		}
	}
	return out
}

func TestBrokerRefuses(t *testing.T) {
	proxy, audit := testBroker(t, []string{"allowed.test:80", "meta.test:80", "local.test:80", "private.test:80", "self.test:80",
		"mixed.test:80"},
		map[string]string{"meta.test": "169.254.169.254", "local.test": "127.0.0.1", "private.test": "10.1.2.3",
			"self.test": "203.0.114.77", "mixed.test": "::ffff:127.0.0.2"})
	for _, c := range []struct{ url, reason string }{
		{"http://denied.test/", "denied.test:80 is not in the profile's egress list"},
		{"http://allowed.test:8080/", "allowed.test:8080 is not in the profile's egress list"},
		{"http://meta.test/", "meta.test resolves to 169.254.169.254, a link-local address"},
		{"http://local.test/", "local.test resolves to 127.0.0.1, a loopback address"},
		{"http://private.test/", "private.test resolves to 10.1.2.3, a private address"},
		{"http://self.test/", "self.test resolves to 203.0.114.77, an address of the host itself"},
		{"http://mixed.test/", "mixed.test resolves to 127.0.0.2, a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", "address 169.254.169.254 port 80 is not in the profile's egress list"},
	} {
		resp, err := proxyClient(proxy).Get(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), c.reason) || strings.Count(string(body), "\n") != 1 {
			t.Errorf("%s: %d %q, want 403 with one line saying %q", c.url, resp.StatusCode, body, c.reason)
		}
	}
	// A request for the broker itself, "OPTIONS *" among them, is
	// refused with its line like any other.
	conn, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")
	if line, _ := bufio.NewReader(conn).ReadString('\n'); !strings.Contains(line, "403") {
		t.Errorf("OPTIONS *: %q, want 403", line)
	}
	for _, l := range waitLines(t, audit, 9) {
		if l.Verdict != "denied" || l.Address != "" || l.Reason == "" {
			t.Errorf("audit %+v, want denied with a reason and no address", l)
		}
	}
}

func TestBrokerConnectionLimit(t *testing.T) {
	proxy, audit := testBroker(t, nil, nil, func(b *Broker) { b.MaxConns = 1 })
	first, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	// The first connection stays open: its request never ends. The
	// listener takes connections in order, so it counts before the second.
	fmt.Fprintf(first, "GET http://x.test/ HTTP/1.1\r\nHost: x.test\r\n")
	second, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	all, _ := io.ReadAll(second)
	if !strings.HasPrefix(string(all), "HTTP/1.1 429") || !strings.Contains(string(all), "egress_connections (1)") {
		t.Fatalf("second connection: %q", all)
	}
	// The request cut off by its close is a line of its own, written
	// before or after the refusal's, as the two connections end.
	first.Close()
	lines := waitLines(t, audit, 2)
	i := slices.IndexFunc(lines, func(l Connection) bool { return l.Destination == "x.test:80" })
	if i < 0 || !strings.Contains(lines[i].Reason, "400 Bad Request") {
		t.Errorf("the cut-off request's line among %+v: want x.test:80 with 400 Bad Request", lines)
	}
}

func TestBrokerByteBudget(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	proxy, audit := testBroker(t, []string{fmt.Sprintf("127.0.0.1:%d", port)}, nil, func(b *Broker) { b.MaxBytes = 64 << 10 })
	resp, err := proxyClient(proxy).Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err == nil {
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n >= int64(len(big)) {
			t.Fatalf("read %d bytes through a 64 KiB budget", n)
		}
	}
	resp, err = proxyClient(proxy).Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "egress_bytes") {
		t.Fatalf("after the budget: %d %q", resp.StatusCode, body)
	}
	lines := waitLines(t, audit, 2)
	if lines[0].Received > 64<<10+32<<10 {
		t.Fatalf("first transfer received %d bytes past a 64 KiB budget", lines[0].Received)
	}
}

// A destination in the list that accepts and never answers, and a dial
// that never completes, do not keep the broker past its end: the broker
// ends with its container and writes every connection's line, where it
// once waited on them until SIGKILL took the lines of everything the job
// did before. A client's half-close still reaches a destination through
// a tunnel.
func TestBrokerEndsWithStalledDestinations(t *testing.T) {
	stall, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stall.Close()
	held := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := stall.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		c, err := echo.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		got, _ := io.ReadAll(c) // until the client's half-close
		fmt.Fprintf(c, "got %d bytes", len(got))
	}()
	stallPort, echoPort := stall.Addr().(*net.TCPAddr).Port, echo.Addr().(*net.TCPAddr).Port
	dialEnded, dialing := make(chan error, 1), make(chan struct{}, 1)
	entries, err := specs.ParseEgress([]string{fmt.Sprintf("127.0.0.1:%d", stallPort), fmt.Sprintf("127.0.0.1:%d", echoPort), "blackhole.test:80"})
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan Connection, 10)
	b := &Broker{Allow: entries, MaxConns: 8, Audit: func(c Connection) { lines <- c },
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("198.51.99.1")}, nil
		},
		HostLocal: func() ([]netip.Prefix, error) { return nil, nil },
		Dial: func(ctx context.Context, addr string) (net.Conn, error) {
			if addr == "198.51.99.1:80" {
				dialing <- struct{}{}
				<-ctx.Done() // a destination that drops every SYN
				dialEnded <- context.Cause(ctx)
				return nil, ctx.Err()
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, ln) }()
	proxy := ln.Addr().String()

	tunnel, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer tunnel.Close()
	fmt.Fprintf(tunnel, "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\nhello", echoPort, echoPort)
	tunnel.(*net.TCPConn).CloseWrite()
	if all, _ := io.ReadAll(tunnel); !strings.HasSuffix(string(all), "\r\n\r\ngot 5 bytes") {
		t.Fatalf("a half-closed tunnel: %q", all)
	}
	waitLines(t, lines, 1)

	for _, req := range []string{
		fmt.Sprintf("GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", stallPort),
		fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", stallPort),
		"GET http://blackhole.test/ HTTP/1.1\r\nHost: blackhole.test\r\n\r\n",
	} {
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, req)
	}
	// Both stalled connections reach the destination, and the dial that
	// never completes has begun, before the end.
	for i := 0; i < 2; i++ {
		select {
		case c := <-held:
			defer c.Close()
		case <-time.After(30 * time.Second):
			t.Fatal("the broker did not connect to the stalled destination")
		}
	}
	select {
	case <-dialing:
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not begin to dial blackhole.test")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the broker still waits on destinations that never answer, 30 s after its end")
	}
	select {
	case cause := <-dialEnded:
		if !errors.Is(cause, context.Canceled) {
			t.Errorf("the dial that never completes ended by %v, not by the broker's end", cause)
		}
	default:
		t.Error("the dial that never completes is still going after the broker's end")
	}
	// The stalled server accepts in the kernel before the broker's dial
	// returns: on a loaded machine the end can still cancel that dial.
	got := waitLines(t, lines, 3)
	var stalled int
	for _, c := range got {
		ended := c.Verdict == "allowed" || strings.Contains(c.Reason, "the broker ended") || strings.Contains(c.Reason, "operation was canceled")
		if strings.HasSuffix(c.Destination, fmt.Sprint(stallPort)) && ended {
			stalled++
		}
	}
	if stalled != 2 {
		t.Errorf("lines %+v, want both stalled connections' lines", got)
	}
}

// TestBrokerRecordsWhatTheServerRefuses: requests Go's HTTP server answers
// itself, before the broker's handler, are the job's attempts all the
// same: each gets one line naming what it asked for and the answer, and a
// well-formed request after them gets its own line, not a second one.
func TestBrokerRecordsWhatTheServerRefuses(t *testing.T) {
	proxy, audit := testBroker(t, nil, nil)
	for _, c := range []struct{ request, dest, answer string }{
		{"CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "169.254.169.254:80", "400 Bad Request"},
		// Empty lines before the request line are the server's to skip.
		{"\r\n\n\r\nCONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "169.254.169.254:80", "400 Bad Request"},
		{"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "169.254.169.254:80", "501 Not Implemented"},
		{"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\nExpect: evil\r\n\r\n", "169.254.169.254:80", "417 Expectation Failed"},
		{"CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\nBad Header: x\r\n\r\n", "169.254.169.254:80", "400 Bad Request"},
		{"CONNECT 10.0.0.1:22 HTTP/1.1\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 80) + "\r\n", "10.0.0.1:22", "431 Request Header Fields Too Large"},
		// Cut off by the job's close before the header ended.
		{"GET http://169.254.169.254/ HTTP/1.1\r\nHost: 169.254.169.254\r\n", "169.254.169.254:80", "400 Bad Request"},
	} {
		conn, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, c.request)
		conn.(*net.TCPConn).CloseWrite()
		all, _ := io.ReadAll(conn)
		conn.Close()
		if !strings.HasPrefix(string(all), "HTTP/1.1 "+c.answer) {
			t.Errorf("%q: answered %q, want %s", c.request[:40], all, c.answer)
		}
		l := waitLines(t, audit, 1)[0]
		want := "refused the request before the broker read it: " + c.answer
		if l.Destination != c.dest || l.Verdict != "denied" || !strings.Contains(l.Reason, want) {
			t.Errorf("%q: line %+v, want denied %s saying %q", c.request[:40], l, c.dest, want)
		}
	}
	resp, err := proxyClient(proxy).Get("http://denied.test/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if l := waitLines(t, audit, 1)[0]; l.Destination != "denied.test:80" {
		t.Errorf("the line after the refused requests: %+v, want denied.test:80's", l)
	}
}

// TestBrokerRecordsRequestsCutOffAtItsEnd: a request whose header had not
// ended when the broker ended is never answered, and still gets its line.
func TestBrokerRecordsRequestsCutOffAtItsEnd(t *testing.T) {
	lines := make(chan Connection, 10)
	b := &Broker{MaxConns: 8, Audit: func(c Connection) { lines <- c }}
	addr, stop := serveBroker(t, b)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254")
	// Bytes the broker never read at its end are none of its lines: wait
	// until it has them.
	for read, deadline := false, time.Now().Add(30*time.Second); !read; {
		if time.Now().After(deadline) {
			t.Fatal("the broker did not read the request in 30 s")
		}
		time.Sleep(10 * time.Millisecond)
		b.mu.Lock()
		for c := range b.conns {
			lc := c.(*limitedConn)
			lc.mu.Lock()
			read = read || len(lc.head) > 0
			lc.mu.Unlock()
		}
		b.mu.Unlock()
	}
	stop()
	select {
	case l := <-lines:
		if l.Destination != "169.254.169.254:80" || !strings.Contains(l.Reason, "never answered") {
			t.Errorf("the cut-off request's line: %+v", l)
		}
	default:
		t.Error("the request cut off by the broker's end left no line")
	}
}
