package egress

import (
	"fmt"
	"sync"
	"time"
)

// Every connection the job makes is an audit line, and the job chooses how
// many it makes and how long the names in them are: unbounded, a job
// writes the host's disk full through the broker (half a gigabyte in ten
// seconds of 60 KB CONNECT names). So a line's job-chosen fields are cut
// to what any real destination needs, and lines past a steady rate are
// counted instead of written, the count written with the next line that
// fits.

const (
	// auditFieldMax bounds the destination and the reason: a DNS name is
	// at most 253 bytes.
	auditFieldMax = 512
	// auditRate and auditBurst bound the lines per second.
	auditRate  = 50
	auditBurst = 200
)

// LimitAudit wraps write so that it gets at most auditBurst lines at once
// and auditRate a second after that, with long fields cut, and returns
// the wrapper and a flush that writes the count of lines left out, for
// the broker's end.
func LimitAudit(write func(Connection)) (audit func(Connection), flush func()) {
	l := newAuditLimit(write, time.Now)
	return l.audit, l.flush
}

func newAuditLimit(write func(Connection), now func() time.Time) *auditLimit {
	return &auditLimit{write: write, now: now, tokens: auditBurst, last: now()}
}

type auditLimit struct {
	write     func(Connection)
	now       func() time.Time
	mu        sync.Mutex
	tokens    float64
	last      time.Time
	leftOut   int
	leftOutBy map[string]int // verdict → lines left out
}

func (l *auditLimit) audit(c Connection) {
	c.Destination, c.Reason = cut(c.Destination), cut(c.Reason)
	l.mu.Lock()
	now := l.now()
	l.tokens = min(auditBurst, l.tokens+now.Sub(l.last).Seconds()*auditRate)
	l.last = now
	if l.tokens < 1 {
		if l.leftOutBy == nil {
			l.leftOutBy = map[string]int{}
		}
		l.leftOut++
		l.leftOutBy[c.Verdict]++
		l.mu.Unlock()
		return
	}
	l.tokens--
	summary := l.takeSummary()
	l.mu.Unlock()
	if summary != nil {
		l.write(*summary)
	}
	l.write(c)
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
	c := &Connection{Verdict: "left out", Reason: fmt.Sprintf("%d connection lines left out (more than %d a second): %d allowed, %d denied, %d failed",
		l.leftOut, auditRate, l.leftOutBy["allowed"], l.leftOutBy["denied"], l.leftOutBy["failed"])}
	l.leftOut, l.leftOutBy = 0, nil
	return c
}

func cut(s string) string {
	if len(s) <= auditFieldMax {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:auditFieldMax], len(s))
}
