package main

import (
	"bufio"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// checkNetwork: the sandbox has its own empty network namespace. Two kinds
// of evidence: only "lo" exists, and a connect to an address that is never
// routed (TEST-NET-1) fails at once with ENETUNREACH because there is no
// route at all. ECONNREFUSED, a timeout or a connection all mean a route
// exists; each is a FAIL with what happened. Nothing else is sent.
//
// gVisor (runsc --network=none) has no /sys/class/net; /proc/net/dev is
// read instead, and its netstack also answers ENETUNREACH.
func checkNetwork(env *probeEnv) Result {
	r := Result{Attempt: "list interfaces; TCP connect to " + env.netTarget + " (1 s timeout)"}
	ifs, src, err := interfaces()
	var extra []string
	for _, n := range ifs {
		if n != "lo" {
			extra = append(extra, n)
		}
	}
	ifsOK := err == nil && len(extra) == 0

	d := net.Dialer{Timeout: time.Second}
	conn, cerr := d.Dial("tcp4", env.netTarget)
	if conn != nil {
		conn.Close()
	}
	r.Observed = errName(cerr)
	if cerr == nil {
		r.Observed = "connected"
	}
	r.Layer = LayerNetns
	// gVisor's netstack answers EHOSTUNREACH where Linux answers
	// ENETUNREACH for "no route". With only lo present Linux cannot answer
	// EHOSTUNREACH (that needs a route and a failed neighbour lookup), so
	// it is accepted only together with the lo-only interface list.
	noRoute := isErrno(cerr, unix.ENETUNREACH) || (ifsOK && isErrno(cerr, unix.EHOSTUNREACH))
	r.Pass = ifsOK && noRoute
	detail := "interfaces (" + src + "): " + strings.Join(ifs, ",")
	if err != nil {
		detail = "cannot list interfaces: " + errName(err)
	}
	if len(extra) > 0 {
		detail += "; not an empty network namespace"
	}
	switch {
	case noRoute:
		if isErrno(cerr, unix.EHOSTUNREACH) {
			detail += "; EHOSTUNREACH is gVisor's netstack saying no route"
		}
	case isErrno(cerr, unix.EPERM), isErrno(cerr, unix.EACCES):
		r.Layer = LayerSeccomp
		detail += "; connect refused by a filter, not by the namespace"
	default:
		r.Layer = LayerNone
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
