package egress

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A job that makes connections as fast as it can, with names as long as a
// request line allows, gets a bounded number of bounded lines, and the
// count of the rest.
func TestLimitAudit(t *testing.T) {
	var lines []Connection
	// A clock that stands still: all 1000 come at once, however long the
	// machine takes to run the loop.
	start := time.Now()
	l := newAuditLimit(func(c Connection) { lines = append(lines, c) }, func() time.Time { return start })
	long := strings.Repeat("b", 60000) + ".x:1"
	for i := 0; i < 1000; i++ {
		l.audit(Connection{Destination: long, Verdict: "denied", Reason: long + " is not in the profile's egress list"})
	}
	l.flush()
	if len(lines) != auditBurst+1 {
		t.Fatalf("%d lines for 1000 connections at once, want %d and a count", len(lines), auditBurst)
	}
	last := lines[len(lines)-1]
	if last.Verdict != "left out" || !strings.Contains(last.Reason, "denied") {
		t.Fatalf("last line %+v, want the count of the lines left out", last)
	}
	for _, l := range lines {
		// A count's reason is the broker's text and the names asked for, cut.
		reasonMax := auditFieldMax + 32
		if l.Verdict == "left out" {
			reasonMax += auditFieldMax
		}
		if len(l.Destination) > auditFieldMax+32 || len(l.Reason) > reasonMax {
			t.Fatalf("a line of %d and %d bytes, want fields cut to %d", len(l.Destination), len(l.Reason), auditFieldMax)
		}
	}
}

// leftOutCount is the number of lines a "left out" count line counts.
func leftOutCount(t *testing.T, c Connection) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(c.Reason, "%d connection lines left out", &n); err != nil {
		t.Fatalf("count line %q: %v", c.Reason, err)
	}
	return n
}

// A job that connects for as long as it runs, at twice the rate and with
// names at their cut, gets no more bytes written than the budget holds
// at once and refills since, one line saying it ran out, and every other
// connection counted. Its names are of '&', which JSON writes as six
// bytes each: the bytes counted are the line's as the log has them.
func TestLimitAuditBytes(t *testing.T) {
	var lines []Connection
	written := 0
	now := time.Now()
	l := newAuditLimit(func(c Connection) {
		lines = append(lines, c)
		line, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		written += len(line) + 1
	}, func() time.Time { return now })
	long := strings.Repeat("&", 60000) + ".x:1"
	const calls, every = 60000, 10 * time.Millisecond // ten minutes
	for i := 0; i < calls; i++ {
		now = now.Add(every)
		l.audit(Connection{Destination: long, Address: "192.0.2.1:1", Verdict: "failed", Reason: long + " could not be reached"})
	}
	l.flush()
	line := lineBytes(Connection{Destination: cut(long), Address: "192.0.2.1:1", Reason: cut(long)}, auditLineOverhead)
	allowed := auditBytesBurst + int(time.Duration(calls*every).Hours()*auditBytesPerHour) + 4*line
	if written > allowed {
		t.Fatalf("%d bytes written for %d connections in %s, want at most %d", written, calls, time.Duration(calls*every), allowed)
	}
	notices, connections, counted := 0, 0, 0
	for _, c := range lines {
		switch {
		case c.Verdict == "failed":
			connections++
		case strings.Contains(c.Reason, "have taken"):
			notices++
		case c.Verdict == "left out":
			counted += leftOutCount(t, c)
		}
	}
	if notices != 1 {
		t.Fatalf("%d lines saying the lines' bytes ran out, want 1", notices)
	}
	if connections+counted != calls {
		t.Fatalf("%d connections written and %d counted, want all %d accounted for", connections, counted, calls)
	}
}

// A long-running container's connections, a real line a second for a
// day, are all written.
func TestLimitAuditSteady(t *testing.T) {
	var lines []Connection
	now := time.Now()
	l := newAuditLimit(func(c Connection) { lines = append(lines, c) }, func() time.Time { return now })
	const calls = 24 * 60 * 60
	for i := 0; i < calls; i++ {
		now = now.Add(time.Second)
		l.audit(Connection{Destination: "registry.npmjs.org:443", Address: "104.16.0.35:443", Verdict: "allowed"})
	}
	l.flush()
	if len(lines) != calls {
		t.Fatalf("%d lines for %d connections a second apart, want every one: %+v", len(lines), calls, lines[len(lines)-1])
	}
}

// The count of lines left out reaches the log once the rate has room for
// it, with no line after it and before the broker's end: a broker killed
// after a burst must not take the job's denied attempts with it.
func TestLimitAuditCountWithoutNextLine(t *testing.T) {
	var mu sync.Mutex
	var lines []Connection
	start := time.Now()
	now := start
	l := newAuditLimit(func(c Connection) { mu.Lock(); lines = append(lines, c); mu.Unlock() }, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	})
	l.tickAfter = 10 * time.Millisecond
	for i := 0; i < auditBurst+3; i++ {
		l.audit(Connection{Destination: "169.254.169.254:80", Verdict: "denied", Reason: "not in the profile's egress list"})
	}
	mu.Lock()
	now = start.Add(time.Second) // room for a line again
	mu.Unlock()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(lines)
		var last Connection
		if n > 0 {
			last = lines[n-1]
		}
		mu.Unlock()
		if n == auditBurst+1 && last.Verdict == "left out" && leftOutCount(t, last) == 3 {
			return
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("%d lines, the last %+v: want %d and the count of the 3 left out, with no line after them", len(lines), lines[len(lines)-1], auditBurst)
}

// Denials cost the job nothing, and a flood of them must not take the
// room of the line of a connection that reached a listed destination: the
// POST after 75,000 denied CONNECTs has its line, with its bytes. Allowed
// lines past their own budget are counted with the bytes they carried.
func TestLimitAuditDenialsLeaveAllowedLines(t *testing.T) {
	var lines []Connection
	start := time.Now()
	l := newAuditLimit(func(c Connection) { lines = append(lines, c) }, func() time.Time { return start })
	for i := 0; i < 5000; i++ {
		l.audit(Connection{Destination: fmt.Sprintf("x%d.invalid:443", i), Verdict: "denied", Reason: "not in the profile's egress list"})
	}
	l.audit(Connection{Destination: "upload.example.com:443", Address: "192.0.2.7:443", Verdict: "allowed", Sent: 4096, Received: 17})
	var found bool
	for _, c := range lines {
		found = found || c.Verdict == "allowed" && c.Destination == "upload.example.com:443" && c.Sent == 4096
	}
	if !found {
		t.Fatalf("the allowed connection after 5000 denied ones has no line of its own: %d lines", len(lines))
	}
	for i := 0; i < auditBurst+10; i++ {
		l.audit(Connection{Destination: "upload.example.com:443", Verdict: "allowed", Sent: 100, Received: 1})
	}
	l.flush()
	var reached Connection
	for _, c := range lines {
		if c.Verdict == "left out" && strings.Contains(c.Reason, " allowed, 0 denied") {
			reached = c
		}
	}
	if reached.Sent != 1100 || reached.Received != 11 || !strings.Contains(reached.Reason, "1100 bytes out and 11 in") {
		t.Fatalf("the count of allowed lines left out: %+v, want 11 lines that carried 1100 bytes out and 11 in", reached)
	}
}

// A flood to one listed destination must not hide the one connection to
// another: past the budget, lines are counted by the egress entry that
// listed them, each count naming its entry and what the job asked for.
func TestLimitAuditCountsByEntry(t *testing.T) {
	var lines []Connection
	start := time.Now()
	l := newAuditLimit(func(c Connection) { lines = append(lines, c) }, func() time.Time { return start })
	for i := 0; i < 5000; i++ {
		l.audit(Connection{Destination: "registry.npmjs.org:443", Entry: "registry.npmjs.org:443", Verdict: "allowed", Sent: 10, Received: 100})
	}
	l.audit(Connection{Destination: "paste.example.com:443", Entry: "*.example.com:443", Verdict: "allowed", Sent: 65536, Received: 20})
	for i := 0; i < 20; i++ {
		l.audit(Connection{Destination: fmt.Sprintf("n%d.example.com:443", i), Entry: "*.example.com:443", Verdict: "failed"})
	}
	l.flush()
	var upload Connection
	counted := 0
	for _, c := range lines {
		if c.Verdict != "left out" {
			continue
		}
		counted += leftOutCount(t, c)
		if c.Destination == "*.example.com:443" {
			upload = c
		}
	}
	// The failed lines have a lane of their own, with room for all 20.
	if counted != 5001-auditBurst {
		t.Fatalf("%d lines counted, want %d", counted, 5001-auditBurst)
	}
	for _, want := range []string{"1 connection lines left out", "1 allowed, 0 denied, 0 failed", "to paste.example.com:443 (65536 bytes out), which the egress entry *.example.com:443 lists",
		"65536 bytes out and 20 in"} {
		if !strings.Contains(upload.Reason, want) {
			t.Fatalf("the count of *.example.com's lines: %+v, want it to say %q", upload, want)
		}
	}
	if upload.Sent != 65536 {
		t.Fatalf("the count of *.example.com's lines carried %d bytes out, want 65536", upload.Sent)
	}
}

// A name under a wildcard entry that does not resolve costs the job as
// little as a denial: 300 of them must not take the room of the line of
// an upload the same entry allows.
func TestLimitAuditFailuresLeaveAllowedLines(t *testing.T) {
	var lines []Connection
	start := time.Now()
	l := newAuditLimit(func(c Connection) { lines = append(lines, c) }, func() time.Time { return start })
	for i := 0; i < 300; i++ {
		l.audit(Connection{Destination: fmt.Sprintf("nx%d.example.test:443", i), Entry: "*.example.test:443", Verdict: "failed", Reason: "no such host"})
	}
	l.audit(Connection{Destination: "bucket.example.test:443", Entry: "*.example.test:443", Verdict: "allowed", Sent: 1 << 20})
	for _, c := range lines {
		if c.Verdict == "allowed" && c.Destination == "bucket.example.test:443" && c.Sent == 1<<20 {
			return
		}
	}
	t.Fatalf("the upload after 300 failed connections under its entry has no line of its own: %d lines", len(lines))
}

// Past the allowed lines' budget, the count names the destinations that
// carried the most: an upload after hundreds of empty connections to
// names the job asked for first is named, with its bytes.
func TestLimitAuditNamesWhereTheBytesWent(t *testing.T) {
	var lines []Connection
	start := time.Now()
	l := newAuditLimit(func(c Connection) { lines = append(lines, c) }, func() time.Time { return start })
	empty := func(i int) Connection {
		return Connection{Destination: fmt.Sprintf("e%d.example.test:443", i), Entry: "*.example.test:443", Verdict: "allowed", Received: 10}
	}
	for i := 0; i < auditBurst+100; i++ {
		l.audit(empty(i))
	}
	l.audit(Connection{Destination: "bucket.example.test:443", Entry: "*.example.test:443", Verdict: "allowed", Sent: 1 << 20})
	for i := 0; i < 50; i++ {
		l.audit(empty(1000 + i))
	}
	l.flush()
	var count Connection
	for _, c := range lines {
		if c.Verdict == "left out" && c.Destination == "*.example.test:443" {
			count = c
		}
	}
	want := "to bucket.example.test:443 (1048576 bytes out), e"
	if !strings.Contains(count.Reason, want) || !strings.Contains(count.Reason, "and 143 lines to others") || count.Sent != 1<<20 {
		t.Fatalf("the count of the entry's lines left out: %+v; want it to name the upload first (%q) and count the 143 others", count, want)
	}
}

// An upload cut into small connections between larger ones to fresh
// names is still named, by the bytes it carried in all of them: each
// judged alone, every piece was the smallest and none was kept.
func TestLimitAuditNamesASplitUpload(t *testing.T) {
	var lines []Connection
	start := time.Now()
	l := newAuditLimit(func(c Connection) { lines = append(lines, c) }, func() time.Time { return start })
	for i := 0; i < auditBurst; i++ {
		l.audit(Connection{Destination: "warm.example.test:443", Entry: "*.example.test:443", Verdict: "allowed"})
	}
	const rounds, decoy, piece = 400, 64 << 10, 16 << 10
	for i := 0; i < leftOutNames; i++ {
		l.audit(Connection{Destination: fmt.Sprintf("p%d.example.test:443", i), Entry: "*.example.test:443", Verdict: "allowed", Sent: decoy})
	}
	for i := 0; i < rounds; i++ {
		l.audit(Connection{Destination: fmt.Sprintf("d%d.example.test:443", i), Entry: "*.example.test:443", Verdict: "allowed", Sent: decoy})
		l.audit(Connection{Destination: "bucket.example.test:443", Entry: "*.example.test:443", Verdict: "allowed", Sent: piece})
	}
	l.flush()
	var count Connection
	for _, c := range lines {
		if c.Verdict == "left out" && c.Destination == "*.example.test:443" {
			count = c
		}
	}
	// The upload is a fifth of the bytes: more than an eighth.
	m := regexp.MustCompile(`bucket\.example\.test:443 \((?:(\d+) to )?(\d+) bytes out\)`).FindStringSubmatch(count.Reason)
	if m == nil {
		t.Fatalf("the count of the entry's lines does not name the split upload with its bytes: %+v", count)
	}
	high, _ := strconv.Atoi(m[2])
	low := high
	if m[1] != "" {
		low, _ = strconv.Atoi(m[1])
	}
	if total := rounds * piece; low > total || high < total {
		t.Fatalf("the split upload is said to have carried %d to %d bytes, not its %d", low, high, total)
	}
	if want := (leftOutNames+rounds)*decoy + rounds*piece; count.Sent != int64(want) {
		t.Fatalf("the entry's count carried %d bytes out, want %d", count.Sent, want)
	}
}
