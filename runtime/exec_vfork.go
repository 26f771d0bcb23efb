package runtime

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A process in a vfork wait (vfork(), or clone with CLONE_VFORK, whose
// child has neither executed a program nor exited) sleeps in the kernel
// until its child does, and only a fatal signal ends that sleep early:
// PTRACE_INTERRUPT never stops it, so its seccomp filter cannot be read.
// A workload can keep a process so for ever, and each such process used
// to hold an exec for the whole bound of a read.
//
// Why such a process is killed, not judged by what can be read: while it
// waits it runs no code of its own, and its vfork child started with its
// very filter chain, which can only grow at the top. So the child's filter,
// which can be read, is the waiting process's own at the bottom, and the
// profile's filter lies there. But the kernel lets another thread of the
// waiting process replace its chain meanwhile (SECCOMP_FILTER_FLAG_TSYNC
// works on every thread, also one in a vfork wait) and then exit, and
// /proc/PID/status tells only how many filters there are, not which:
// nothing the kernel offers (PTRACE_SECCOMP_GET_FILTER and
// PTRACE_GET_SECCOMP_METADATA need a ptrace stop; kcmp has no seccomp
// type) proves the chain the child shows is still the waiting process's.
// An inference that a workload can defeat is no evidence, and bulkhead
// passes processes on evidence only; so a process that stays in a vfork
// wait longer than any program takes to start (vforkGrace) is killed at
// once, and the error says that the workload kept it waiting there.
// A process that only passes through a vfork wait (posix_spawn, Go's
// os/exec, a shell) is read as soon as its child has executed.

// vforkGrace is how long a process may stay in one vfork wait before it is
// taken as parked there. Its child only has to execute a program, which
// takes milliseconds, also on a loaded machine and under the container's
// cpu quota (throttled for at most a 100 ms period at a time).
const vforkGrace = 2 * time.Second

// kcmpVM is KCMP_VM of linux/kcmp.h: whether two processes share memory.
const kcmpVM = 1

// vforkChild returns the child pid is waiting for in a vfork wait, or 0
// when it is not in one: it sleeps uninterruptibly ('D' in /proc/PID/stat)
// while a child of its own shares its memory (kcmp KCMP_VM), which is
// what a vfork child does until it executes a program or exits. Only the
// thread pid itself counts: it is the one a read stops.
func vforkChild(pid int) int {
	f, err := statFields(pid)
	if err != nil || len(f) == 0 || f[0] != "D" {
		return 0
	}
	p := strconv.Itoa(pid)
	children, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
	if err != nil {
		return 0
	}
	for _, c := range strings.Fields(string(children)) {
		child, err := strconv.Atoi(c)
		if err != nil {
			continue
		}
		same, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(pid), uintptr(child), kcmpVM, 0, 0, 0)
		if errno == 0 && same == 0 {
			return child
		}
	}
	return 0
}

// parkedInVfork is the error for a process that stayed in a vfork wait
// past vforkGrace.
type parkedInVfork struct {
	child  int
	waited time.Duration
}

func (e *parkedInVfork) Error() string {
	return fmt.Sprintf("the workload kept it in vfork() for at least %s: its vfork child %d neither executed a program nor exited, "+
		"and a process in a vfork wait cannot be stopped to read its seccomp filter", e.waited.Round(100*time.Millisecond), e.child)
}
