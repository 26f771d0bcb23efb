package verify

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// searcher is whom the kernel checks a lookup for: the process's
// filesystem uid, its filesystem gid first in groups and then its
// supplementary groups; all is a process whose capabilities pass every
// search (CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH in its effective set).
// A uid of 0 is no such process by itself: the policy empties its
// capability sets, and the kernel holds it to the modes and ACLs.
type searcher struct {
	uid    uint32
	groups []uint32
	all    bool
}

// searcherOf is the searcher of pid, by its status (ReadProcStatus).
func searcherOf(pid int, st ProcStatus) (searcher, error) {
	var w searcher
	uids, gids := strings.Fields(st["Uid"]), strings.Fields(st["Gid"])
	if len(uids) != 4 || len(gids) != 4 {
		return searcher{}, fmt.Errorf("verify: status of %d: Uid %q, Gid %q", pid, st["Uid"], st["Gid"])
	}
	ids := append([]string{uids[3], gids[3]}, strings.Fields(st["Groups"])...)
	for i, v := range ids {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return searcher{}, fmt.Errorf("verify: status of %d: %q: %w", pid, v, err)
		}
		if i == 0 {
			w.uid = uint32(n)
		} else {
			w.groups = append(w.groups, uint32(n))
		}
	}
	eff, err := strconv.ParseUint(st["CapEff"], 16, 64)
	if err != nil {
		return searcher{}, fmt.Errorf("verify: status of %d: CapEff %q: %w", pid, st["CapEff"], err)
	}
	w.all = eff&(1<<unix.CAP_DAC_OVERRIDE|1<<unix.CAP_DAC_READ_SEARCH) != 0
	return w, nil
}

// firstDenied returns the index of the first directory in dirs (open
// descriptors) the searcher may not search, or -1. The kernel answers:
// a thread of bulkhead's takes the searcher's filesystem ids and groups
// and asks faccessat2 for X_OK on each, so its owner, ACL (named users and
// groups under the mask) and group rules are the kernel's own, not a
// model of them. The thread is never handed back to Go's scheduler: it
// ends with its goroutine, and its credentials with it.
func (w searcher) firstDenied(dirs []int) (int, error) {
	if w.all || len(dirs) == 0 {
		return -1, nil
	}
	type answer struct {
		i   int
		err error
	}
	done := make(chan answer, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		i, err := w.searchAs(dirs)
		done <- answer{i, err}
	}()
	a := <-done
	return a.i, a.err
}

// searchAs is firstDenied on the locked thread. The raw system calls
// change this thread's credentials alone (Go's own Setgroups and glibc's
// change every thread's). Its effective capabilities are emptied last, so
// that none passes the check for the searcher (a filesystem uid of 0
// keeps them otherwise).
func (w searcher) searchAs(dirs []int) (int, error) {
	if len(w.groups) == 0 {
		return -1, errors.New("verify: a searcher without a filesystem gid")
	}
	groups := w.groups
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(&groups[0])), 0); e != 0 {
		return -1, fmt.Errorf("verify: take groups %v to check a search: %w", groups, e)
	}
	// setfsgid and setfsuid return the id before and report no error:
	// the second call of each tells the id in force.
	for _, id := range []struct {
		call uintptr
		want uint32
	}{{unix.SYS_SETFSGID, groups[0]}, {unix.SYS_SETFSUID, w.uid}} {
		unix.RawSyscall(id.call, uintptr(id.want), 0, 0)
		if got, _, _ := unix.RawSyscall(id.call, uintptr(id.want), 0, 0); uint32(got) != id.want {
			return -1, fmt.Errorf("verify: take filesystem id %d to check a search: still %d", id.want, uint32(got))
		}
	}
	var caps [2]unix.CapUserData
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return -1, fmt.Errorf("verify: capabilities of the checking thread: %w", err)
	}
	caps[0].Effective, caps[1].Effective = 0, 0
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return -1, fmt.Errorf("verify: drop the checking thread's capabilities: %w", err)
	}
	for i, d := range dirs {
		err := unix.Faccessat2(d, "", unix.X_OK, unix.AT_EACCESS|unix.AT_EMPTY_PATH)
		switch {
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			return i, nil
		case err != nil:
			return -1, fmt.Errorf("verify: whether uid %d may search a directory: %w", w.uid, err)
		}
	}
	return -1, nil
}
