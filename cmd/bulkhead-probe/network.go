package main

import (
	"bufio"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// checkNetwork: the sandbox has its own empty network namespace. Two kinds
// of evidence: only "lo" exists, and a connect to an address that is never
// routed (TEST-NET-1) fails at once with ENETUNREACH because there is no
// route at all. ECONNREFUSED, a timeout or a connection all mean a route
// exists; each is a FAIL with what happened.
//
// No packet may leave the machine: when any interface but lo exists (or
// the list cannot be read) nothing is sent at all, and the control FAILs
// with the interface list. 192.0.2.1 is not routed on the internet, but a
// host may route it to its gateway, as this project's VMs do.
//
// gVisor (runsc --network=none) has no /sys/class/net; /proc/net/dev is
// read instead. Its netstack answers EHOSTUNREACH where Linux answers
// ENETUNREACH; that is accepted only with -gvisor (and, as always, with
// only lo present).
func checkNetwork(env *probeEnv) Result {
	r := Result{Attempt: "list interfaces; TCP connect to " + env.netTarget + " (1 s timeout) only if lo is the only one"}
	ifs, src, err := interfaces()
	var extra []string
	for _, n := range ifs {
		if n != "lo" {
			extra = append(extra, n)
		}
	}
	detail := "interfaces (" + src + "): " + strings.Join(ifs, ",")
	switch {
	case err != nil:
		r.Observed, r.Layer = "not tried", protocol.LayerNone
		r.Detail = "cannot list interfaces (" + errName(err) + "): no connection attempted"
		return r
	case len(extra) > 0:
		r.Observed, r.Layer = "interfaces "+strings.Join(ifs, ","), protocol.LayerNone
		r.Detail = detail + "; not an empty network namespace: no connection attempted, traffic could leave the machine"
		return r
	}

	d := net.Dialer{Timeout: time.Second}
	conn, cerr := d.Dial("tcp4", env.netTarget)
	if conn != nil {
		conn.Close()
	}
	r.Observed = errName(cerr)
	if cerr == nil {
		r.Observed = "connected"
	}
	switch {
	case isErrno(cerr, unix.ENETUNREACH):
		r.Layer, r.Pass = protocol.LayerNetns, true
	case isErrno(cerr, unix.EHOSTUNREACH) && env.gvisor:
		r.Layer, r.Pass = LayerGVisor, true
		detail += "; EHOSTUNREACH is gVisor's netstack saying no route"
	case isErrno(cerr, unix.EPERM), isErrno(cerr, unix.EACCES):
		r.Layer = protocol.LayerSeccomp
		detail += "; connect refused by a filter, not by the namespace"
	default:
		r.Layer = protocol.LayerNone
		detail += "; a route to " + env.netTarget + " exists"
	}
	r.Detail = detail
	return r
}

func interfaces() ([]string, string, error) {
	if ents, err := os.ReadDir("/sys/class/net"); err == nil && len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		return names, "/sys/class/net", nil
	}
	f, err := os.Open("/proc/net/dev")
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, _, ok := strings.Cut(sc.Text(), ":"); ok {
			names = append(names, strings.TrimSpace(name))
		}
	}
	sort.Strings(names)
	return names, "/proc/net/dev", sc.Err()
}
