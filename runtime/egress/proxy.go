package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"bulkhead.dev/bulkhead/specs"
)

// DialTimeout bounds one connection attempt to a destination address.
const DialTimeout = 10 * time.Second

// Connection is what the broker did with one request of the job: the
// audit log gets one line each.
type Connection struct {
	// Destination is host:port as the job asked for it, Address the
	// address the broker connected to ("" when it did not).
	Destination, Address string
	// Sent and Received count the bytes to and from the destination.
	Sent, Received int64
	// Verdict is "allowed", "denied" (the policy) or "failed" (allowed,
	// but the destination could not be resolved or reached).
	Verdict string
	// Reason is a denial's or failure's one line.
	Reason string
	// Entry is the profile's egress entry that listed the destination,
	// "" when none did: the operator's list, not the job, bounds how
	// many there are.
	Entry string
}

// Broker is one container's egress proxy.
type Broker struct {
	Allow []specs.EgressEntry
	// MaxConns bounds the job's open connections to the broker; MaxBytes
	// the bytes carried both ways in all, 0 for none.
	MaxConns int
	MaxBytes int64
	// Audit gets every connection once it ends. AuditOverhead is what a
	// line of it costs the audit budget beside the job-chosen fields
	// (destination, address, reason): the record's own fields and the
	// rest of the line at their longest; 0 for auditLineOverhead.
	Audit         func(Connection)
	AuditOverhead int
	// Resolve, HostLocal and Dial default to the host's resolver, the
	// addresses its kernel takes for its own (hostLocal) and a TCP dial.
	Resolve   func(ctx context.Context, host string) ([]netip.Addr, error)
	HostLocal func() ([]netip.Prefix, error)
	Dial      func(ctx context.Context, addr string) (net.Conn, error)

	used  atomic.Int64 // bytes carried
	open  atomic.Int64 // client connections
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{} // client connections, closed at shutdown
	// work ends at shutdown, and with it every dial and every connection
	// to a destination: a destination that never answers must not keep
	// the broker past its container, its lines unwritten.
	work context.Context
}

// Serve answers the job's requests on ln until ctx ends, then closes
// every connection and returns once their audit lines are written.
func (b *Broker) Serve(ctx context.Context, ln net.Listener) error {
	b.conns = map[net.Conn]struct{}{}
	limit := limitAudit(b.Audit, b.AuditOverhead)
	b.Audit = limit.audit
	defer limit.flush() // after every connection's line: b.wg is waited for below
	work, endWork := context.WithCancel(context.Background())
	defer endWork()
	b.work = work
	srv := &http.Server{
		Handler:           b,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
		// Every request is the broker's to answer and to write a line
		// of, "OPTIONS *" too (the server would answer it itself).
		DisableGeneralOptionsHandler: true,
		ConnContext:                  withConn,
	}
	// One request per connection: a request the server refuses itself
	// is then the connection's first line (server_refusals.go).
	srv.SetKeepAlivesEnabled(false)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(&limitedListener{Listener: ln, b: b}) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	srv.Close()
	endWork()
	b.mu.Lock()
	open := make([]net.Conn, 0, len(b.conns))
	for c := range b.conns {
		open = append(open, c)
	}
	b.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
	b.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// endingConn is a connection to a destination that its context closes.
type endingConn struct {
	net.Conn
	stop func() bool
}

func (c *endingConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// CloseWrite passes a client's half-close on to the destination.
func (c *endingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// denial is a request the broker answers itself: status and one line.
type denial struct {
	status  int
	verdict string
	reason  string
}

func deny(reason string) *denial { return &denial{http.StatusForbidden, "denied", reason} }

func fail(reason string) *denial { return &denial{http.StatusBadGateway, "failed", reason} }

func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.wg.Add(1)
	defer b.wg.Done()
	handling(r)
	host, port, dest, d := target(r)
	c := Connection{Destination: dest}
	defer func() { b.Audit(c) }()
	if r.Method == http.MethodConnect && d == nil {
		b.tunnel(w, host, port, &c)
		return
	}
	if d == nil {
		// Not the request's context: the server cancels that when the
		// client half-closes after its request, as HTTP/1.0 clients and
		// `nc` do, and the answer is still wanted. The lookup and the
		// dial have their own timeouts.
		var up net.Conn
		up, c.Entry, d = b.connect(b.work, host, port)
		if d == nil {
			c.Address = up.RemoteAddr().String()
			counted := &countedConn{Conn: up, b: b}
			var err error
			d, err = forward(w, r, counted)
			up.Close()
			c.Sent, c.Received = counted.sent.Load(), counted.received.Load()
			if d == nil {
				c.Verdict = "allowed"
				if err != nil {
					c.Reason = err.Error()
					// The answer was cut after its header: closing the
					// connection unfinished keeps a chunked answer from
					// looking complete to the job.
					panic(http.ErrAbortHandler)
				}
				return
			}
		}
	}
	c.Verdict, c.Reason = d.verdict, d.reason
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Bulkhead-Egress", d.verdict)
	w.WriteHeader(d.status)
	io.WriteString(w, d.line(dest))
}

// line is the one line a denied or failed request gets as its body.
func (d *denial) line(dest string) string {
	return fmt.Sprintf("bulkhead egress broker: %s %s: %s\n", dest, d.verdict, d.reason)
}

// target is the destination of a request: CONNECT host:port, or an
// absolute http:// URI. A request for the broker itself (a path, not a
// URI) or any other scheme is refused.
func target(r *http.Request) (host string, port uint16, dest string, d *denial) {
	var hostport string
	switch {
	case r.Method == http.MethodConnect:
		hostport = r.Host
	case r.URL.IsAbs() && r.URL.Scheme == "http" && r.URL.Host != "":
		hostport = r.URL.Host
		if r.URL.Port() == "" {
			hostport = net.JoinHostPort(r.URL.Hostname(), "80")
		}
	case r.URL.IsAbs():
		return "", 0, r.URL.Scheme + "://" + r.URL.Host, deny("only http:// is forwarded as is; other schemes go through CONNECT")
	default:
		return "", 0, r.Host, deny("this is an HTTP proxy: ask for http://host/path or CONNECT host:port")
	}
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, hostport, deny("want host:port")
	}
	n, err := specs.ParsePort(p)
	if err != nil {
		return "", 0, hostport, deny(err.Error())
	}
	if name, ok := specs.NormalizeHostName(h); ok {
		h = name
	}
	return h, n, net.JoinHostPort(h, p), nil
}

// connect vets the destination and connects to it, with a connection
// closed when ctx ends, and the egress entry that listed it. A name
// outside the egress list is never resolved: the job learns nothing of
// it, and the resolver sees no query the job made up.
func (b *Broker) connect(ctx context.Context, host string, port uint16) (net.Conn, string, *denial) {
	if b.MaxBytes > 0 && b.used.Load() >= b.MaxBytes {
		return nil, "", deny(fmt.Sprintf("the container used up its egress_bytes (%d bytes)", b.MaxBytes))
	}
	addrs, entry, d := b.vet(ctx, host, port)
	if d != nil {
		return nil, entry, d
	}
	dial := b.Dial
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "tcp", addr)
		}
	}
	var errs []string
	for _, a := range addrs {
		dctx, cancel := context.WithTimeout(ctx, DialTimeout)
		conn, err := dial(dctx, netip.AddrPortFrom(a, port).String())
		cancel()
		if err == nil {
			return &endingConn{Conn: conn, stop: context.AfterFunc(ctx, func() { conn.Close() })}, entry, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, entry, fail("cannot connect: " + strings.Join(errs, "; "))
}

// vet returns the addresses a destination may be reached at and the entry
// that listed it, or why not.
func (b *Broker) vet(ctx context.Context, host string, port uint16) ([]netip.Addr, string, *denial) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		a = a.Unmap()
		if e, ok := b.addrEntry(a, port); ok {
			return []netip.Addr{a}, e.String(), nil
		}
		return nil, "", deny(fmt.Sprintf("address %s port %d is not in the profile's egress list; ask for a listed name", a, port))
	}
	name, ok := specs.NormalizeHostName(host)
	if !ok {
		return nil, "", deny(fmt.Sprintf("%q is no host name", host))
	}
	listed, ok := b.nameEntry(name, port)
	if !ok {
		return nil, "", deny(fmt.Sprintf("%s:%d is not in the profile's egress list", name, port))
	}
	entry := listed.String()
	resolve := b.Resolve
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, DialTimeout)
	addrs, err := resolve(rctx, name)
	cancel()
	if err != nil || len(addrs) == 0 {
		return nil, entry, fail(fmt.Sprintf("cannot resolve %s: %v", name, err))
	}
	hostAddrs := b.HostLocal
	if hostAddrs == nil {
		hostAddrs = hostLocal
	}
	own, err := hostAddrs()
	if err != nil {
		return nil, entry, fail(fmt.Sprintf("cannot read the host's own addresses to refuse them: %v", err))
	}
	// One refused address refuses the name: a name that mixes a public
	// address with an internal one is pointed at the host's network.
	for i, a := range addrs {
		a = a.Unmap()
		addrs[i] = a
		if why := refusedAddress(a, own); why != "" {
			if _, listed := b.addrEntry(a, port); !listed {
				return nil, "", deny(fmt.Sprintf("%s resolves to %s, %s; only an egress entry naming %s allows it", name, a, why,
					netip.AddrPortFrom(a, port)))
			}
		}
	}
	return addrs, entry, nil
}

func (b *Broker) nameEntry(name string, port uint16) (specs.EgressEntry, bool) {
	for _, e := range b.Allow {
		if e.MatchName(name, port) {
			return e, true
		}
	}
	return specs.EgressEntry{}, false
}

func (b *Broker) addrEntry(a netip.Addr, port uint16) (specs.EgressEntry, bool) {
	for _, e := range b.Allow {
		if e.MatchAddr(a, port) {
			return e, true
		}
	}
	return specs.EgressEntry{}, false
}

// tunnel answers CONNECT and copies bytes both ways until both sides
// are done. The client's connection is taken over before the destination
// is dialled: what a client sends right after its CONNECT belongs to the
// tunnel, and the HTTP server must not read it as the next request.
func (b *Broker) tunnel(w http.ResponseWriter, host string, port uint16, c *Connection) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "bulkhead egress broker: connection cannot be taken over", http.StatusInternalServerError)
		c.Verdict, c.Reason = "failed", "connection cannot be taken over"
		return
	}
	client, rw, err := hj.Hijack()
	if err != nil {
		c.Verdict, c.Reason = "failed", err.Error()
		return
	}
	defer client.Close()
	// The request's context ends with the hijack; the dial is bounded
	// by its own timeout.
	up, entry, d := b.connect(b.work, host, port)
	c.Entry = entry
	if d != nil {
		body := d.line(net.JoinHostPort(host, strconv.Itoa(int(port))))
		fmt.Fprintf(client, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Bulkhead-Egress: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			d.status, http.StatusText(d.status), d.verdict, len(body), body)
		c.Verdict, c.Reason = d.verdict, d.reason
		return
	}
	defer up.Close()
	counted := &countedConn{Conn: up, b: b}
	defer func() { c.Sent, c.Received = counted.sent.Load(), counted.received.Load() }()
	c.Address, c.Verdict = up.RemoteAddr().String(), "allowed"
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		c.Reason = err.Error()
		return
	}
	// What the client sent after its CONNECT is already in rw's buffer.
	var fromClient io.Reader = client
	if n := rw.Reader.Buffered(); n > 0 {
		buffered, _ := rw.Reader.Peek(n)
		fromClient = io.MultiReader(strings.NewReader(string(buffered)), client)
	}
	errc := make(chan error, 2)
	go func() { errc <- pipe(counted, fromClient) }()
	go func() { errc <- pipe(client, counted) }()
	err = <-errc
	if err != nil {
		// One side broke: the other copy ends when its connections close.
		client.Close()
		up.Close()
	}
	if err2 := <-errc; err == nil {
		err = err2
	}
	if err != nil {
		c.Reason = err.Error()
	}
}

// pipe copies src to dst and then half-closes dst, so a request that ends
// with the client's write side still gets its answer.
func pipe(dst net.Conn, src io.Reader) error {
	_, err := io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// hopHeaders belong to one connection, not to the request forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func dropHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// forward sends a plain-HTTP request to up, in origin form with the
// destination's own Host (a different Host header would reach another
// site served at the same address), and copies the answer back. A
// failure before the answer's header is returned for the broker to
// answer; one after it only as the error.
func forward(w http.ResponseWriter, r *http.Request, up *countedConn) (*denial, error) {
	out := r.Clone(r.Context())
	out.RequestURI, out.Host, out.Close = "", "", true
	dropHopHeaders(out.Header)
	if err := out.Write(up); err != nil {
		return upstreamFailure(up, err), err
	}
	// The limit sits below the buffer: the header, chunk lines and
	// trailer are all parsed out of it.
	limit := &framingLimit{r: up}
	resp, err := http.ReadResponse(bufio.NewReader(limit), out)
	if err != nil {
		return upstreamFailure(up, err), err
	}
	defer resp.Body.Close()
	dropHopHeaders(resp.Header)
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if resp.ContentLength >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)
	_, err = io.Copy(w, delivered{body: resp.Body, limit: limit})
	return nil, err
}

// upstreamFailure is the answer to a request the destination was not
// sent in full or did not answer: the used-up budget is the job's doing,
// the rest the destination's.
func upstreamFailure(up *countedConn, err error) *denial {
	if errors.Is(err, errBudget) {
		return deny(fmt.Sprintf("the container used up its egress_bytes (%d bytes)", up.b.MaxBytes))
	}
	if up.b.work.Err() != nil {
		return fail("the broker ended with its container before the destination answered")
	}
	return fail(strings.ReplaceAll(err.Error(), "\n", " "))
}
