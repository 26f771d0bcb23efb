package runtime

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/escape"
	"bulkhead.dev/bulkhead/runtime/verify"
)

// sweepContainer reads every process of the container (containerProcesses)
// against the profile, any of its allowed identities, and within the
// init's cgroups, and kills each one that does not hold. full also reads
// each one's seccomp filter (a ptrace stop); without it the status fields
// show the filter's presence only, which is enough for processes of an
// exec that was itself read in full, since a filter cannot be removed.
//
// The processes are read side by side against one deadline for the whole
// sweep (sweepTimeout), so however many processes the workload keeps from
// being read, an exec waits for that once, not once per process; what is
// still unread at the deadline is killed.
func sweepContainer(c *recorded, full bool) error {
	pids, own, err := containerProcesses(c.rec.InitPid, c.rec.Pod != nil)
	if err != nil {
		return fmt.Errorf("the container's processes cannot be listed: %w", err)
	}
	e, err := execExpectation(c)
	if err != nil {
		return err
	}
	s := sweep{c: c, e: e, own: own, full: full, deadline: time.Now().Add(sweepTimeout)}
	bad := make([]error, len(pids))
	readers := make(chan struct{}, sweepReaders)
	var wg sync.WaitGroup
	for i, pid := range pids {
		readers <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-readers }()
			bad[i] = s.process(pid)
		}()
	}
	wg.Wait()
	return errors.Join(bad...)
}

// sweepTimeout bounds one sweep as a whole. It is the bound one read of
// one process has (verifyExecTimeout): the reads run side by side, and a
// read of a process that can be stopped takes milliseconds even on a
// loaded machine, so every read of the sweep still has as long as a read
// ever had, and no exec waits longer for a sweep, whatever the workload.
// A process parked in vfork is killed after vforkGrace, well before it.
const sweepTimeout = verifyExecTimeout

// sweepReaders bounds the reads in progress at once: each read under
// ptrace holds a thread of its own, and concurrent execs' sweeps meet on
// the same processes, where one tracer waits for another. Eight at a time
// end a sweep of the default profile's 64 processes, all parked in vfork
// (vforkGrace each), in about 16 s, within sweepTimeout.
const sweepReaders = 8

// sweep is one sweep of a container's processes.
type sweep struct {
	c         *recorded
	e         *verify.Expectation
	own, full bool
	deadline  time.Time
}

// process reads one process of the sweep and kills it when it does not
// hold or cannot be read by the deadline; the error says which and why.
func (s *sweep) process(pid int) error {
	p, err := holdProcess(pid)
	if errors.Is(err, errGone) {
		return nil
	}
	if err != nil {
		return err
	}
	defer p.release()
	// A process that ended since the listing may have left its pid to
	// another, which is not the container's to judge or kill: it is
	// no longer in the namespace, or the cgroups, it was found by.
	initPid := s.c.rec.InitPid
	if s.own && !p.sharesPidNamespace(initPid) ||
		!s.own && (verifyExecCgroup(pid, initPid) != nil || p.exited(0)) {
		return nil
	}
	// Another exec's runc init, still setting itself up, has not yet
	// dropped its capabilities or joined the cgroups: judge it once it
	// runs its process.
	awaitSetUp(p, initPid, s.deadline)
	err = readWithin(p, s.deadline, func() error {
		read := verify.Status
		if s.full {
			read = verify.Process
		}
		r, err := read(pid, s.e)
		if err == nil {
			err = r.Err()
		}
		if err == nil {
			err = verifyExecCgroup(pid, initPid)
		}
		return err
	})
	if errors.Is(err, errTooSlow) {
		err = fmt.Errorf("%w: the container's processes could not all be read within %s", err, sweepTimeout)
	}
	if err == nil || p.ending() {
		return nil
	}
	if kerr := p.kill(); kerr != nil {
		err = fmt.Errorf("%w (and it could not be killed: %v)", err, kerr)
	} else if !p.exited(5 * time.Second) {
		err = fmt.Errorf("%w (killed, still there after 5s)", err)
	} else {
		err = fmt.Errorf("%w (killed)", err)
	}
	return inContainer(pid, err)
}

// inContainer names the container's process pid in err. The name is the
// workload's to choose: escaped, it cannot rewrite the caller's terminal.
func inContainer(pid int, err error) error {
	return fmt.Errorf("process %d (%s) in the container: %w", pid, escape.Text(comm(pid)), err)
}

// containerProcesses lists the host pids of the container's processes,
// and whether they were found by the init's own pid namespace.
// When the init is pid 1 of its pid namespace, nothing else shares that
// namespace: every process in it is the container's, also one that left
// the container's cgroups (which a cgroup listing would miss). Otherwise
// (a pod's shared namespace, which holds its other containers too) they
// are the processes in the init's cgroups.
func containerProcesses(initPid int, podSandbox bool) (pids []int, own bool, err error) {
	own, ns, err := ownPidNamespace(initPid)
	if err != nil {
		return nil, false, err
	}
	// A pod sandbox's init is pid 1 of a namespace the pod's containers
	// may join (a pod that shares its process namespace): its processes
	// are those of its cgroups, or an exec into the sandbox would judge,
	// and kill, every container of the pod.
	own = own && !podSandbox
	if !own {
		g, err := cgroups.ForPID(initPid)
		if err != nil {
			return nil, false, err
		}
		pids, err = g.Procs()
		return pids, false, err
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, true, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/pid", &st) != nil {
			continue // gone since the listing
		}
		if st.Dev == ns.Dev && st.Ino == ns.Ino {
			pids = append(pids, pid)
		}
	}
	return pids, true, nil
}

// ownPidNamespace tells whether pid is pid 1 of its own pid namespace
// (the last NSpid field), and that namespace.
func ownPidNamespace(pid int) (bool, unix.Stat_t, error) {
	var ns unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &ns); err != nil {
		return false, ns, err
	}
	st, err := verify.ReadProcStatus(pid)
	if err != nil {
		return false, ns, err
	}
	f := strings.Fields(st["NSpid"])
	if len(f) == 0 {
		return false, ns, fmt.Errorf("process %d: no NSpid in /proc status", pid)
	}
	return len(f) > 1 && f[len(f)-1] == "1", ns, nil
}

// runcInitComms are the names runc's init carries inside the container's
// pid namespace until it executes the container's process
// (libcontainer/nsenter): its last stage names itself "runc:[2:INIT]"
// only after it was cloned, with the name of the stage that cloned it.
var runcInitComms = map[string]bool{"runc:[1:CHILD]": true, "runc:[2:INIT]": true}

// setUpPoll is the longest pause between two looks at a runc init.
const setUpPoll = 20 * time.Millisecond

// awaitSetUp waits, until deadline, while the held process is a runc init
// that another exec's runc started and that has not yet executed its
// process: it bears runc init's name, has no seccomp filter of its own,
// and its parent (runc exec, on the host) is outside the container's pid
// namespace. Every process the workload starts inherits the filter and
// cannot shed it, so one naming itself so is judged at once. A real one
// is waited for as long as the sweep may take: on a loaded machine the
// kernel has left runc inits just moved into the container's cgroup
// without CPU for seconds, and one judged half-way is killed, failing
// the exec that started it.
func awaitSetUp(p *heldProcess, initPid int, deadline time.Time) {
	if p.pid == initPid {
		return // the container's own init, whose parent is outside too
	}
	parent, err := parentPid(p.pid)
	if err != nil || sameNamespace(parent, initPid) {
		return
	}
	// Backing off: every sweep of every concurrent exec waits so, and
	// their polls must not take the CPU the inits need to set up.
	for pause := time.Millisecond; time.Now().Before(deadline); pause = min(2*pause, setUpPoll) {
		if !runcInitComms[comm(p.pid)] || !verify.Unfiltered(p.pid) || p.exited(0) {
			return
		}
		time.Sleep(pause)
	}
}

// comm is the process's name, as the process set it; "?" once it is gone.
func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// parentPid reads the parent's pid from /proc/PID/stat.
func parentPid(pid int) (int, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	return strconv.Atoi(f[1])
}

// sameNamespace tells whether processes a and b share a pid namespace.
func sameNamespace(a, b int) bool {
	var x, y unix.Stat_t
	return unix.Stat("/proc/"+strconv.Itoa(a)+"/ns/pid", &x) == nil && unix.Stat("/proc/"+strconv.Itoa(b)+"/ns/pid", &y) == nil &&
		x.Dev == y.Dev && x.Ino == y.Ino
}
