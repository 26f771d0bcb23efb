package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// allowedDev are the /dev entries a default sandbox may have: the policy's
// devices, the pts/shm/mqueue mounts, the console runc binds, and the
// symlinks runtimes create (fd, stdin, stdout, stderr, core → /proc/kcore).
var allowedDev = map[string]bool{
	"null": true, "zero": true, "full": true, "random": true, "urandom": true,
	"tty": true, "ptmx": true, "pts": true, "shm": true, "mqueue": true, "console": true,
	"fd": true, "stdin": true, "stdout": true, "stderr": true, "core": true,
}

const capMknod = 27 // CAP_MKNOD

// checkDevices: /dev holds only allowed entries, and creating a device node
// (1:1, /dev/mem) fails with EPERM. The mknod of a FIFO next to it needs no
// privilege and shows seccomp allows mknodat, so the EPERM is a privilege
// check: CAP_MKNOD when the capability is absent, the device cgroup when
// it is present.
//
// With -gvisor, gVisor's own /dev/fuse and /dev/net/tun are accepted, and
// so is a mknod that succeeds in gVisor's tmpfs when the node cannot be
// opened (ENXIO): the Sentry has no device behind it.
func checkDevices(env *probeEnv) Result {
	r := Result{Attempt: "list /dev; mknod c 1:1 in /tmp"}
	ents, err := os.ReadDir("/dev")
	var extra, gvisorOwn []string
	if err == nil {
		for _, e := range ents {
			switch {
			case allowedDev[e.Name()]:
			case env.gvisor && gVisorDevOK(e.Name()):
				gvisorOwn = append(gvisorOwn, e.Name())
			default:
				extra = append(extra, e.Name())
			}
		}
	}
	sort.Strings(extra)

	node := probeFile(tmpDir, "mem")
	fifo := probeFile(tmpDir, "fifo")
	ctl := unix.Mkfifo(fifo, 0o600)
	os.Remove(fifo)
	merr := unix.Mknod(node, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 1)))
	var openErr error
	if merr == nil {
		// Say whether the node leads anywhere (nodev /tmp: EACCES; gVisor,
		// which lets mknod through, has no /dev/mem behind it).
		var f *os.File
		if f, openErr = os.Open(node); openErr == nil {
			f.Close()
		}
		os.Remove(node)
	}
	r.Observed = "mknod " + errName(merr)
	if len(extra) > 0 {
		r.Observed += "; extra: " + strings.Join(extra, ",")
	}
	var notes []string
	if err != nil {
		notes = append(notes, "cannot list /dev: "+errName(err))
	} else {
		notes = append(notes, fmt.Sprintf("%d entries in /dev", len(ents)))
	}
	notes = append(notes, "mkfifo (control): "+errName(ctl))
	if len(gvisorOwn) > 0 {
		notes = append(notes, "gVisor's own: "+strings.Join(gvisorOwn, ","))
	}
	unopenable := env.gvisor && merr == nil && isErrno(openErr, unix.ENXIO)
	r.Pass = err == nil && len(extra) == 0 && (isErrno(merr, unix.EPERM) || unopenable)
	switch {
	case unopenable:
		r.Layer = LayerGVisor
		r.Observed += ", open ENXIO"
		notes = append(notes, "gVisor's tmpfs lets mknod c 1:1 through, but the Sentry has no device behind the node (open: ENXIO)")
	case merr == nil:
		r.Layer = protocol.LayerNone
		notes = append(notes, "a 1:1 (/dev/mem) node could be created; opening it: "+errName(openErr))
	case isErrno(merr, unix.EPERM) && ctl != nil && !isErrno(ctl, unix.EEXIST):
		r.Layer = protocol.LayerSeccompOrCaps
		notes = append(notes, "mknodat itself seems refused")
	case isErrno(merr, unix.EPERM) && hasCap(capMknod):
		r.Layer = protocol.LayerDevices
	case isErrno(merr, unix.EPERM):
		r.Layer = protocol.LayerCapabilities
	default:
		r.Layer = protocol.LayerNone
	}
	r.Detail = strings.Join(notes, "; ")
	return r
}

func hasCap(c uint) bool {
	v, ok := procStatus()["CapEff"]
	if !ok {
		n, err := capFromSyscall("CapEff")
		return err != nil || n&(1<<c) != 0
	}
	n, err := strconv.ParseUint(v, 16, 64)
	return err != nil || n&(1<<c) != 0
}
