package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// rawServer answers each connection's first request with the bytes of
// answer, then closes it. A destination that misbehaves is written by
// hand: net/http would not send it.
func rawServer(t *testing.T, answer ...[]byte) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				for _, a := range answer {
					// The broker stops reading and closes: the error is expected.
					if _, err := c.Write(a); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// An endless header line is cut at the limit: the job gets 502 with one
// line, the audit says failed, and the broker's allocations stay far
// below the line's size.
func TestBrokerResponseHeaderLimit(t *testing.T) {
	const lineSize = 10 << 20
	huge := []byte(strings.Repeat("a", lineSize))
	port := rawServer(t, []byte("HTTP/1.1 200 OK\r\nX-Endless: "), huge, []byte("\r\n\r\n"))
	proxy, audit := testBroker(t, []string{fmt.Sprintf("127.0.0.1:%d", port)}, nil)
	client := proxyClient(proxy)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := waitLines(t, audit, 1)
	runtime.ReadMemStats(&after)

	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "response header") ||
		strings.Count(string(body), "\n") != 1 || resp.Header.Get("X-Bulkhead-Egress") != "failed" {
		t.Errorf("answer %d %q (X-Bulkhead-Egress %q), want 502 with one line about the response header",
			resp.StatusCode, body, resp.Header.Get("X-Bulkhead-Egress"))
	}
	if l := lines[0]; l.Verdict != "failed" || !strings.Contains(l.Reason, "response header") ||
		l.Received > MaxResponseHeaderBytes {
		t.Errorf("audit %+v, want failed about the response header, at most %d bytes received", l, MaxResponseHeaderBytes)
	}
	// Everything allocated in the meantime, freed or not, by the broker,
	// the client and the server alike: parsing the line would take more
	// than twice its size.
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 8<<20 {
		t.Errorf("%d bytes allocated answering a %d-byte header line, want under 8 MiB", grown, lineSize)
	}
}

// Chunk framing is bounded between body bytes, not in all: an answer in
// many tiny chunks, far more framing than the bound, arrives whole.
func TestBrokerManySmallChunks(t *testing.T) {
	const chunks = 100000
	port := rawServer(t, []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
		[]byte(strings.Repeat("1\r\nx\r\n", chunks)), []byte("0\r\nX-Trailer: yes\r\n\r\n"))
	proxy, audit := testBroker(t, []string{fmt.Sprintf("127.0.0.1:%d", port)}, nil)
	resp, err := proxyClient(proxy).Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || string(body) != strings.Repeat("x", chunks) {
		t.Fatalf("answer %d, %d bytes, %v; want 200 with %d bytes", resp.StatusCode, len(body), err, chunks)
	}
	if l := waitLines(t, audit, 1)[0]; l.Verdict != "allowed" || l.Reason != "" {
		t.Fatalf("audit %+v, want allowed without a reason", l)
	}
}
