package egress

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Go's HTTP server answers some requests itself, before the broker's
// handler sees them: a malformed request line or header, a duplicate or
// malformed Host, an unknown Transfer-Encoding (501), an Expect other than
// 100-continue (417), a header past MaxHeaderBytes (431). And a request
// cut off before its header ends (the job closed, or ReadHeaderTimeout
// passed) is never answered. Each is an attempt of the job all the same:
// a connection that read a request's bytes and closes without the handler
// having begun gets its line, naming what the request line asked for and
// what the server answered. The broker serves one request per connection
// (no keep-alive), so a connection's first line is its request's.

// headLimit bounds what a connection keeps of its first line.
const headLimit = 1024

// answerLimit bounds what it keeps of an answer the server wrote itself.
const answerLimit = 256

// connKey finds a request's connection in its context (ConnContext).
type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// handling tells r's connection that the broker's handler has it: the
// handler writes the request's line.
func handling(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
		c.mu.Lock()
		c.handled = true
		c.mu.Unlock()
	}
}

// keepHead keeps the start of what the job sent, up to its request line:
// the first line with anything in it (the server skips empty ones).
func (c *limitedConn) keepHead(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handled || len(c.head) >= headLimit || bytes.IndexByte(bytes.TrimLeft(c.head, "\r\n"), '\n') >= 0 {
		return
	}
	c.head = append(c.head, p[:min(len(p), headLimit-len(c.head))]...)
}

// keepAnswer keeps the start of what the server wrote before the handler
// began: its own answer.
func (c *limitedConn) keepAnswer(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handled || len(c.answer) >= answerLimit {
		return
	}
	c.answer = append(c.answer, p[:min(len(p), answerLimit-len(c.answer))]...)
}

// refusal is the line of a request the server refused itself, or false
// when the connection read nothing or the handler had it.
func (c *limitedConn) refusal() (Connection, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handled || len(c.head) == 0 {
		return Connection{}, false
	}
	line, _, _ := bytes.Cut(bytes.TrimLeft(c.head, "\r\n"), []byte("\n"))
	reason := "the request was cut off before its header ended (the broker ended, or the header took past 30 s); never answered"
	if answer, _, _ := bytes.Cut(c.answer, []byte("\r\n")); len(answer) > 0 {
		reason = "the broker's HTTP server refused the request before the broker read it: " + strings.TrimPrefix(string(answer), "HTTP/1.1 ")
	}
	return Connection{Destination: requestedDestination(string(bytes.TrimSuffix(line, []byte("\r")))), Verdict: "denied", Reason: reason}, true
}

// requestedDestination is what a request line asked for, as the handler
// names it (target), or the request target as sent when it does not parse.
func requestedDestination(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 {
		return line
	}
	r := &http.Request{Method: f[0], Host: f[1], URL: &url.URL{}}
	if f[0] != http.MethodConnect {
		u, err := url.ParseRequestURI(f[1])
		if err != nil {
			return f[1]
		}
		r.URL, r.Host = u, u.Host
	}
	_, _, dest, _ := target(r)
	return dest
}
