package runtime

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// heldProcess is a process bulkhead did not start but must verify and may
// have to kill (an exec'd process is the backend's or the init's child, a
// gVisor sandbox is runsc's, a broker was started by an earlier create).
// It is held by pidfd, so a kill never reaches another process that
// reused the pid once it ended.
type heldProcess struct {
	pid, fd int
}

// errGone is holdProcess's error for a process that is no longer there.
var errGone = errors.New("no such process")

// holdProcess opens a pidfd on pid; errGone says it is already gone.
func holdProcess(pid int) (*heldProcess, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EINVAL) {
		// EINVAL: the pid is known but no longer leads a process (it
		// ended and was reaped; Linux 6.1 answers so where 6.18 says
		// ESRCH).
		return nil, fmt.Errorf("hold process %d: %w (%v)", pid, errGone, err)
	}
	if err != nil {
		return nil, fmt.Errorf("hold process %d: %w", pid, err)
	}
	return &heldProcess{pid: pid, fd: fd}, nil
}

func (p *heldProcess) release() { unix.Close(p.fd) }

// kill sends SIGKILL to the whole process.
func (p *heldProcess) kill() error { return p.signal(unix.SIGKILL) }

// signal sends sig to the process; one already gone is no error.
func (p *heldProcess) signal(sig unix.Signal) error {
	err := unix.PidfdSendSignal(p.fd, sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// exited waits up to d for every thread of the process to have exited.
func (p *heldProcess) exited(d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for {
		ms := int(time.Until(deadline) / time.Millisecond)
		n, err := unix.Poll(fds, max(ms, 0))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// ending tells whether the process has exited or is exiting, and then is
// gone within a second. Its leader alone exiting is not enough: the
// process ends only with its last thread, which the pidfd reports.
func (p *heldProcess) ending() bool {
	if p.exited(0) {
		return true
	}
	return leaderExiting(p.pid) && p.exited(time.Second)
}

// sharesPidNamespace tells whether the held process is in the pid
// namespace of other (a container's init). Read by pid, so it is the held
// process's only while that has not exited, which is checked after.
func (p *heldProcess) sharesPidNamespace(other int) bool {
	return sameNamespace(p.pid, other) && !p.exited(0)
}

// pfExiting is the kernel's PF_EXITING task flag (include/linux/sched.h),
// set as soon as a task starts to exit.
const pfExiting = 0x4

// leaderExiting reads /proc/PID/stat: a zombie, a dead task or one whose
// flags say it has begun to exit.
func leaderExiting(pid int) bool {
	f, err := statFields(pid)
	if err != nil {
		return true
	}
	if len(f) < 7 {
		return false
	}
	if f[0] == "Z" || f[0] == "X" {
		return true
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&pfExiting != 0
}

// statFields are the fields of /proc/PID/stat after the command name,
// which ends at the last ')': state, ppid, pgrp, session, tty_nr, tpgid,
// flags, ...
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(s[i+1:]), nil
}
