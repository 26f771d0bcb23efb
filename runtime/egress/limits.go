package egress

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// errBudget ends a connection once the container's bytes are used up.
var errBudget = errors.New("the container used up its egress_bytes")

// countedConn counts the bytes to and from a destination and holds them
// to the container's budget: a transfer past it is cut, not finished.
type countedConn struct {
	net.Conn
	b              *Broker
	sent, received atomic.Int64
}

// take charges up to want bytes to the budget and returns how many it
// charged: fewer when less is left, so the budget is never overrun, not
// even by connections spending it at once.
func (c *countedConn) take(want int) int {
	if c.b.MaxBytes <= 0 {
		c.b.used.Add(int64(want))
		return want
	}
	for {
		used := c.b.used.Load()
		n := min(int64(want), max(c.b.MaxBytes-used, 0))
		if c.b.used.CompareAndSwap(used, used+n) {
			return int(n)
		}
	}
}

// Read takes no more than is left of the budget from the destination.
// Bytes a concurrent connection spent meanwhile are not passed on: what
// the job gets never adds up to more than MaxBytes.
func (c *countedConn) Read(p []byte) (int, error) {
	if c.b.MaxBytes > 0 {
		left := c.b.MaxBytes - c.b.used.Load()
		if left <= 0 {
			return 0, errBudget
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := c.Conn.Read(p)
	got := c.take(n)
	c.received.Add(int64(got))
	if got < n {
		return got, errBudget
	}
	return n, err
}

// Write sends what is left of the budget of p and fails for the rest.
// The bytes are charged before they are written, and what the
// destination did not take is given back.
func (c *countedConn) Write(p []byte) (int, error) {
	allowed := c.take(len(p))
	if allowed == 0 && len(p) > 0 {
		return 0, errBudget
	}
	n, err := c.Conn.Write(p[:allowed])
	if n < allowed {
		c.b.used.Add(int64(n - allowed))
	}
	c.sent.Add(int64(n))
	if err == nil && allowed < len(p) {
		err = errBudget
	}
	return n, err
}

func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// limitedListener holds the job to MaxConns open connections to the
// broker: one past it gets 429 and is closed at once, so a job cannot
// exhaust the broker's descriptors or memory with idle connections.
type limitedListener struct {
	net.Listener
	b *Broker
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.b.open.Add(1) > int64(l.b.MaxConns) {
			l.b.open.Add(-1)
			reason := fmt.Sprintf("the container has egress_connections (%d) open already", l.b.MaxConns)
			fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s\n",
				len(reason)+1, reason)
			c.Close()
			l.b.Audit(Connection{Verdict: "denied", Reason: reason})
			continue
		}
		lc := &limitedConn{Conn: c, b: l.b}
		l.b.mu.Lock()
		l.b.conns[lc] = struct{}{}
		l.b.mu.Unlock()
		return lc, nil
	}
}

type limitedConn struct {
	net.Conn
	b    *Broker
	once sync.Once
	// What server_refusals.go needs to write the line of a request the
	// server answered itself.
	mu           sync.Mutex
	head, answer []byte
	handled      bool
}

func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.keepHead(p[:n])
	return n, err
}

func (c *limitedConn) Write(p []byte) (int, error) {
	c.keepAnswer(p)
	return c.Conn.Write(p)
}

// Close writes the line of a request the server refused itself before
// the job sees the connection end, and before the connection leaves the
// broker's count: Serve waits for that.
func (c *limitedConn) Close() error {
	c.once.Do(func() {
		if line, ok := c.refusal(); ok {
			c.b.Audit(line)
		}
		c.b.open.Add(-1)
		c.b.mu.Lock()
		delete(c.b.conns, c)
		c.b.mu.Unlock()
	})
	return c.Conn.Close()
}

func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
