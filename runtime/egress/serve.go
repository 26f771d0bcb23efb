package egress

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/runtime/detach"
	"bulkhead.dev/bulkhead/runtime/egresshost"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// ServeHandedOver is the broker once it runs unprivileged: it takes the
// descriptors the root broker left it (serveFds, in the order of
// egresshost's Fd constants), puts itself under its seccomp filter,
// reports "ok" on ready, and serves until the container's init exits, its
// record is deleted or it gets SIGTERM.
func ServeHandedOver(serveFds string, ready *os.File) error {
	report := func(err error) error { return detach.Report(ready, err) }
	b, ln, fds, err := handedOver(serveFds)
	if err != nil {
		return report(err)
	}
	// Not dumpable: another process of the broker's uid (another
	// container's broker) cannot trace it or read its memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return report(fmt.Errorf("egress broker: %w", err))
	}
	if err := InstallFilter(); err != nil {
		return report(err)
	}
	report(nil)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer cancel()
		polled := []unix.PollFd{{Fd: int32(fds[egresshost.FdInit]), Events: unix.POLLIN}}
		for ctx.Err() == nil {
			n, err := unix.Poll(polled, 1000)
			if err == nil && n > 0 {
				return // the init exited: the container's network is gone
			}
			var st unix.Stat_t
			if unix.Fstat(fds[egresshost.FdRecord], &st) == nil && st.Nlink == 0 {
				return // deleted
			}
		}
	}()
	if ln.Addr().Network() == "unix" {
		// Room for the connections the profile allows and a few being
		// refused or closing: the rest wait, or are reset.
		ln = MuxListener(ln, b.MaxConns+8)
	}
	return b.Serve(ctx, ln)
}

// handedOver rebuilds the broker from what --serve-fds hands over.
func handedOver(serveFds string) (*Broker, net.Listener, []int, error) {
	parts := strings.Split(serveFds, ",")
	if len(parts) != egresshost.NServeFds {
		return nil, nil, nil, fmt.Errorf("egress broker: --serve-fds %q: want %d descriptors", serveFds, egresshost.NServeFds)
	}
	fds := make([]int, egresshost.NServeFds)
	for i, p := range parts {
		fd, err := strconv.Atoi(p)
		if err != nil || (fd < 3 && !(i == egresshost.FdAudit && fd == -1)) {
			return nil, nil, nil, fmt.Errorf("egress broker: --serve-fds %q: bad descriptor %q", serveFds, p)
		}
		fds[i] = fd
	}
	sf := os.NewFile(uintptr(fds[egresshost.FdSettings]), "settings")
	var set egresshost.Settings
	err := json.NewDecoder(sf).Decode(&set)
	sf.Close()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("egress broker: settings: %w", err)
	}
	allow, err := specs.ParseEgress(set.Egress)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("egress broker %s: %w", set.ID, err)
	}
	lf := os.NewFile(uintptr(fds[egresshost.FdListener]), "listener")
	ln, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("egress broker %s: listener: %w", set.ID, err)
	}
	var log *os.File
	if fds[egresshost.FdAudit] >= 0 {
		log = os.NewFile(uintptr(fds[egresshost.FdAudit]), "audit log")
	}
	rec := &state.Record{ID: set.ID, Profile: set.Profile, Backend: set.Backend, Mode: set.Mode}
	b := &Broker{Allow: allow, MaxConns: set.MaxConns, MaxBytes: set.MaxBytes,
		Audit: func(c Connection) { auditConnection(log, rec, c) }, AuditOverhead: auditOverhead(rec)}
	return b, ln, fds, nil
}

// auditOverhead is what an egress line of rec's takes beside the fields
// the job chooses (destination, address, reason), at its longest: the
// record's id and profile are the caller's and the operator's, and a
// fixed guess undercounted long ones.
func auditOverhead(rec *state.Record) int {
	longest := int64(math.MaxInt64)
	e := &audit.Entry{Event: "egress", ID: rec.ID, Profile: rec.Profile, Backend: rec.Backend, Mode: rec.Mode,
		Destination: "x", Address: "x", BytesSent: &longest, BytesReceived: &longest, Outcome: "left out", Error: "x",
		Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}
	line, err := json.Marshal(e)
	if err != nil {
		return 0
	}
	// The newline, less the three values "x" that stand in for the job's.
	return len(line) + 1 - 3*len(`"x"`)
}

// auditConnection writes one line of the audit log, open as log (nil:
// none), for one connection.
func auditConnection(log *os.File, rec *state.Record, c Connection) {
	if log == nil {
		return
	}
	sent, received := c.Sent, c.Received
	e := &audit.Entry{Event: "egress", ID: rec.ID, Profile: rec.Profile, Backend: rec.Backend, Mode: rec.Mode,
		Destination: c.Destination, Address: c.Address, BytesSent: &sent, BytesReceived: &received,
		Outcome: c.Verdict, Error: c.Reason}
	if err := audit.WriteTo(log, e); err != nil {
		logrus.Warnf("bulkhead: %v", err)
	}
}
