package egress

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
// and auditRate a second after that in each lane (laneOf), with long
// fields cut; its flush writes the counts of lines left out, for the
// broker's end.
func limitAudit(write func(Connection), overhead int) *auditLimit {
	l := newAuditLimit(write, time.Now)
	if overhead > 0 {
		l.overhead = overhead
	}
	l.tickAfter = auditTick
	return l
}

func newAuditLimit(write func(Connection), now func() time.Time) *auditLimit {
	l := &auditLimit{write: write, now: now, last: now(), overhead: auditLineOverhead}
	for i := range l.lanes {
		l.lanes[i] = auditLane{tokens: auditBurst, bytes: auditBytesBurst}
	}
	return l
}

// The lines go in lanes, each with a budget of its own, by what a line
// costs the job: a denial nothing (a CONNECT to a name nobody resolves),
// and 75,000 of them in 20 s spent the budget that a POST to a listed
// destination's line needed, so that line was only counted. A failed
// connection is as cheap (a name under a wildcard entry that does not
// resolve), and 300 of them left an upload under the same entry counted
// without its destination. An allowed connection reached its destination;
// it is bounded by egress_connections, the dial and egress_bytes, and no
// denial or failure can take its room.
const (
	laneDenied = iota
	laneFailed
	laneAllowed
	laneCount
)

// laneNames says what each lane's lines are, for the line that says its
// bytes ran out.
var laneNames = [laneCount]string{"denied", "failed", "allowed"}

func laneOf(c Connection) int {
	switch c.Verdict {
	case "denied":
		return laneDenied
	case "allowed":
		return laneAllowed
	}
	return laneFailed
}

// auditLane is one lane's budget and what it left out.
type auditLane struct {
	tokens float64 // lines that may be written now
	bytes  float64 // bytes of lines that may be written now
	// left counts the lines left out by the egress entry that listed
	// their destinations, in the order they came (entries, in order).
	// One count for the lane let a flood to one listed destination
	// hide the one connection to another: the count said "10,001
	// allowed", not where the one went. The profile bounds the entries.
	left      map[string]*leftOut
	entries   []string
	spentOnce bool // the bytes ran out once, and a line said so
}

// leftOut counts the lines of one egress entry's connections left out.
type leftOut struct {
	lines     int
	byVerdict map[string]int
	// sent and received: the bytes of the connections left out.
	sent, received int64
	// named are leftOutNames destinations (a wildcard entry lists many),
	// kept as the Space-Saving count keeps the heaviest: a newcomer takes
	// the place of the one with the fewest bytes out and its count with
	// it, so that a destination that carried more than an eighth of the
	// bytes is named whatever other names it is split among (an upload cut
	// into small connections between larger ones to decoys kept only its
	// last connection's bytes when each was judged alone). others counts
	// the lines to destinations not named.
	named  []leftOutName
	others int
}

// leftOutName is a destination a count of lines left out names, with its
// lines and bytes out since it was named; over bounds how many of those
// bytes were others' whose place it took.
type leftOutName struct {
	destination string
	lines       int
	sent, over  int64
}

// leftOutNames bounds the destinations a count of lines left out names.
const leftOutNames = 8

// count adds c to the lines left out.
func (lane *auditLane) count(c Connection) {
	if lane.left == nil {
		lane.left = map[string]*leftOut{}
	}
	o := lane.left[c.Entry]
	if o == nil {
		o = &leftOut{byVerdict: map[string]int{}}
		lane.left[c.Entry] = o
		lane.entries = append(lane.entries, c.Entry)
	}
	o.lines++
	o.byVerdict[c.Verdict]++
	o.sent += c.Sent
	o.received += c.Received
	o.name(c)
}

// name counts c's line under its destination, which takes the place of
// the named one that carried the least out when all are taken.
func (o *leftOut) name(c Connection) {
	if i := slices.IndexFunc(o.named, func(n leftOutName) bool { return n.destination == c.Destination }); i >= 0 {
		o.named[i].lines++
		o.named[i].sent += c.Sent
		return
	}
	if len(o.named) < leftOutNames {
		o.named = append(o.named, leftOutName{destination: c.Destination, lines: 1, sent: c.Sent})
		return
	}
	least := 0
	for i, n := range o.named {
		if n.sent < o.named[least].sent {
			least = i
		}
	}
	l := o.named[least]
	o.others += l.lines
	o.named[least] = leftOutName{destination: c.Destination, lines: 1, sent: l.sent + c.Sent, over: l.sent}
}

// destinations names o's destinations, those that carried the most first.
func (o *leftOut) destinations() string {
	named := slices.Clone(o.named)
	slices.SortStableFunc(named, func(a, b leftOutName) int { return cmp.Compare(b.sent, a.sent) })
	var parts []string
	for _, n := range named {
		part := n.destination
		switch {
		case n.over > 0:
			part += fmt.Sprintf(" (%d to %d bytes out)", n.sent-n.over, n.sent)
		case n.sent > 0:
			part += fmt.Sprintf(" (%d bytes out)", n.sent)
		}
		parts = append(parts, part)
	}
	to := strings.Join(parts, ", ")
	if o.others > 0 {
		to += fmt.Sprintf(" and %d lines to others", o.others)
	}
	return to
}

type auditLimit struct {
	write    func(Connection)
	now      func() time.Time
	overhead int // of a line beside its job-chosen fields
	mu       sync.Mutex
	last     time.Time
	lanes    [laneCount]auditLane
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
	lane := &l.lanes[laneOf(c)]
	if lane.tokens < 1 || lane.bytes <= 0 {
		lane.count(c)
		if !l.ticking && l.tickAfter > 0 {
			l.ticking = true
			time.AfterFunc(l.tickAfter, l.tick)
		}
		l.mu.Unlock()
		return
	}
	lines := l.take(lane, append(lane.takeSummaries(), c))
	l.mu.Unlock()
	for _, line := range lines {
		l.write(line)
	}
}

// auditTick is how soon the broker tries again to write the count of
// lines left out.
const auditTick = time.Second

// tick writes each lane's count of lines left out if its rate has room
// for it, and tries again later if one has not.
func (l *auditLimit) tick() {
	l.mu.Lock()
	l.refill()
	var lines []Connection
	l.ticking = false
	for i := range l.lanes {
		lane := &l.lanes[i]
		if len(lane.left) > 0 && lane.tokens >= 1 && lane.bytes > 0 {
			lines = append(lines, l.take(lane, lane.takeSummaries())...)
		}
		l.ticking = l.ticking || len(lane.left) > 0
	}
	if l.ticking {
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
	for i := range l.lanes {
		lane := &l.lanes[i]
		lane.tokens = min(auditBurst, lane.tokens+elapsed.Seconds()*auditRate)
		lane.bytes = min(auditBytesBurst, lane.bytes+elapsed.Hours()*auditBytesPerHour)
	}
	l.last = now
}

// take spends a line's token of lane and the bytes of lines, and adds the
// line that says the bytes ran out, the first time they do; l.mu is held.
func (l *auditLimit) take(lane *auditLane, lines []Connection) []Connection {
	lane.tokens--
	for _, line := range lines {
		lane.bytes -= float64(lineBytes(line, l.overhead))
	}
	if lane.bytes <= 0 && !lane.spentOnce {
		lane.spentOnce = true
		which := ""
		for i := range l.lanes {
			if &l.lanes[i] == lane {
				which = laneNames[i]
			}
		}
		lines = append(lines, Connection{Verdict: "left out", Reason: fmt.Sprintf(
			"this container's audit lines of %s connections have taken %d MiB: from now on %d MiB an hour of them are written, and the rest counted", which, auditBytesBurst>>20, auditBytesPerHour>>20)})
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
	var lines []Connection
	for i := range l.lanes {
		lines = append(lines, l.lanes[i].takeSummaries()...)
	}
	l.mu.Unlock()
	for _, line := range lines {
		l.write(line)
	}
}

// takeSummaries are the lines that count the lane's lines left out, one
// for each egress entry (denials have none), with the destinations asked
// for and the bytes their connections carried; l.mu is held.
func (lane *auditLane) takeSummaries() []Connection {
	var lines []Connection
	for _, entry := range lane.entries {
		o := lane.left[entry]
		to := cut(o.destinations())
		if entry != "" {
			to += ", which the egress entry " + entry + " lists"
		}
		lines = append(lines, Connection{Verdict: "left out", Destination: entry, Sent: o.sent, Received: o.received,
			Reason: fmt.Sprintf("%d connection lines left out (more than %d a second, or more than %d MiB at once and %d MiB an hour): %d allowed, %d denied, %d failed, to %s; they carried %d bytes out and %d in",
				o.lines, auditRate, auditBytesBurst>>20, auditBytesPerHour>>20, o.byVerdict["allowed"], o.byVerdict["denied"], o.byVerdict["failed"], to, o.sent, o.received)})
	}
	lane.left, lane.entries = nil, nil
	return lines
}

func cut(s string) string {
	if len(s) <= auditFieldMax {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:auditFieldMax], len(s))
}
