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

func (c *countedConn) spend(n int) error {
	used := c.b.used.Add(int64(n))
	if c.b.MaxBytes > 0 && used > c.b.MaxBytes {
		return errBudget
	}
	return nil
}

func (c *countedConn) Read(p []byte) (int, error) {
	if c.b.MaxBytes > 0 && c.b.used.Load() >= c.b.MaxBytes {
		return 0, errBudget
	}
	n, err := c.Conn.Read(p)
	c.received.Add(int64(n))
	if err == nil {
		err = c.spend(n)
	} else {
		_ = c.spend(n)
	}
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	if c.b.MaxBytes > 0 && c.b.used.Load()+int64(len(p)) > c.b.MaxBytes {
		return 0, errBudget
	}
	n, err := c.Conn.Write(p)
	c.sent.Add(int64(n))
	_ = c.spend(n)
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
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.b.open.Add(-1)
		c.b.mu.Lock()
		delete(c.b.conns, c)
		c.b.mu.Unlock()
	})
	return err
}

func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
