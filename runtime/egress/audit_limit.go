package egress

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// Every connection the job makes is an audit line, and the job chooses how
// many it makes and how long the names in them are: unbounded, a job
// writes the host's disk full through the broker (half a gigabyte in ten
// seconds of 60 KB CONNECT names). So a line's job-chosen fields are cut
// to what any real destination needs, and lines past a steady rate, or
// past a budget of bytes, are counted instead of written, the count
// written with the next line that fits. The rate alone let a job that
// runs for days fill the disk all the same (about 100 KB a second of
// lines at their cut, 8 GB a day, from each container); the budget holds
// a real job's lines and refills slowly enough that a long-running
// container's few connections an hour are all written.

const (
	// auditFieldMax bounds the destination and the reason: a DNS name is
	// at most 253 bytes.
	auditFieldMax = 512
	// auditRate and auditBurst bound the lines per second.
	auditRate  = 50
	auditBurst = 200
	// auditBytesBurst and auditBytesPerHour bound the bytes of lines, each
	// counted as its job-chosen fields and the rest of it at its longest
	// (the broker's AuditOverhead, auditLineOverhead when not known). A real connection's line is a few hundred bytes: 30,000 of
	// them at once, then about two a second, for ever.
	auditBytesBurst   = 8 << 20
	auditBytesPerHour = 2 << 20
	auditLineOverhead = 256
)

// limitAudit wraps write so that it gets at most auditBurst lines at once
// and auditRate a second after that, with long fields cut; its flush
// writes the count of lines left out, for the broker's end.
func limitAudit(write func(Connection), overhead int) *auditLimit {
	l := newAuditLimit(write, time.Now)
	if overhead > 0 {
		l.overhead = overhead
	}
	l.tickAfter = auditTick
	return l
}

func newAuditLimit(write func(Connection), now func() time.Time) *auditLimit {
	return &auditLimit{write: write, now: now, tokens: auditBurst, bytes: auditBytesBurst, last: now(), overhead: auditLineOverhead}
}

type auditLimit struct {
	write     func(Connection)
	now       func() time.Time
	overhead  int // of a line beside its job-chosen fields
	mu        sync.Mutex
	tokens    float64 // lines that may be written now
	bytes     float64 // bytes of lines that may be written now
	last      time.Time
	leftOut   int
	leftOutBy map[string]int // verdict → lines left out
	spentOnce bool           // the bytes ran out once, and a line said so
	// tickAfter is how soon the count of lines left out is tried again
	// (0: only with the next line and at the end), and ticking says a try
	// is due: the count is written as soon as the rate has room for it,
	// not only with the next line or at the broker's end, which a SIGKILL
	// never reaches.
	tickAfter time.Duration
	ticking   bool
}

func (l *auditLimit) audit(c Connection) {
	c.Destination, c.Reason = cut(c.Destination), cut(c.Reason)
	l.mu.Lock()
	l.refill()
	if l.tokens < 1 || l.bytes <= 0 {
		if l.leftOutBy == nil {
			l.leftOutBy = map[string]int{}
		}
		l.leftOut++
		l.leftOutBy[c.Verdict]++
		if !l.ticking && l.tickAfter > 0 {
			l.ticking = true
			time.AfterFunc(l.tickAfter, l.tick)
		}
		l.mu.Unlock()
		return
	}
	var lines []Connection
	if summary := l.takeSummary(); summary != nil {
		lines = append(lines, *summary)
	}
	lines = l.take(append(lines, c))
	l.mu.Unlock()
	for _, line := range lines {
		l.write(line)
	}
}

// auditTick is how soon the broker tries again to write the count of
// lines left out.
const auditTick = time.Second

// tick writes the count of lines left out if the rate has room for it,
// and tries again later if it has not.
func (l *auditLimit) tick() {
	l.mu.Lock()
	l.refill()
	var lines []Connection
	if l.leftOut > 0 && l.tokens >= 1 && l.bytes > 0 {
		lines = l.take([]Connection{*l.takeSummary()})
	}
	if l.ticking = l.leftOut > 0; l.ticking {
		time.AfterFunc(l.tickAfter, l.tick)
	}
	l.mu.Unlock()
	for _, line := range lines {
		l.write(line)
	}
}

// refill adds what the time since the last refill earned; l.mu is held.
func (l *auditLimit) refill() {
	now := l.now()
	elapsed := now.Sub(l.last)
	l.tokens = min(auditBurst, l.tokens+elapsed.Seconds()*auditRate)
	l.bytes = min(auditBytesBurst, l.bytes+elapsed.Hours()*auditBytesPerHour)
	l.last = now
}

// take spends a line's token and the bytes of lines, and adds the line
// that says the bytes ran out, the first time they do; l.mu is held.
func (l *auditLimit) take(lines []Connection) []Connection {
	l.tokens--
	for _, line := range lines {
		l.bytes -= float64(lineBytes(line, l.overhead))
	}
	if l.bytes <= 0 && !l.spentOnce {
		l.spentOnce = true
		lines = append(lines, Connection{Verdict: "left out", Reason: fmt.Sprintf(
			"this container's audit lines have taken %d MiB: from now on %d MiB an hour of them are written, and the rest counted", auditBytesBurst>>20, auditBytesPerHour>>20)})
	}
	return lines
}

// lineBytes is what a line costs of the byte budget: its job-chosen
// fields as the log's JSON spells them (an '&' of a Host name is six
// bytes there, \u0026, and a quote in a reason two), and the rest.
func lineBytes(c Connection, overhead int) int {
	return jsonLen(c.Destination) + jsonLen(c.Address) + jsonLen(c.Reason) + overhead
}

func jsonLen(s string) int {
	b, err := json.Marshal(s)
	if err != nil {
		return 6 * len(s)
	}
	return len(b)
}

func (l *auditLimit) flush() {
	l.mu.Lock()
	summary := l.takeSummary()
	l.mu.Unlock()
	if summary != nil {
		l.write(*summary)
	}
}

// takeSummary is the line that counts the lines left out, if any; l.mu
// is held.
func (l *auditLimit) takeSummary() *Connection {
	if l.leftOut == 0 {
		return nil
	}
	c := &Connection{Verdict: "left out", Reason: fmt.Sprintf("%d connection lines left out (more than %d a second, or more than %d MiB at once and %d MiB an hour): %d allowed, %d denied, %d failed",
		l.leftOut, auditRate, auditBytesBurst>>20, auditBytesPerHour>>20, l.leftOutBy["allowed"], l.leftOutBy["denied"], l.leftOutBy["failed"])}
	l.leftOut, l.leftOutBy = 0, nil
	return c
}

func cut(s string) string {
	if len(s) <= auditFieldMax {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:auditFieldMax], len(s))
}
