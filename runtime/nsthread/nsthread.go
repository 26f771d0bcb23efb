// Package nsthread runs a function of bulkhead's inside a container's
// namespace, on one thread joined to it for the while.
package nsthread

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// kinds are the namespaces a thread of a Go program may join alone: a
// mount or user namespace is the whole process's.
var kinds = map[string]int{"net": unix.CLONE_NEWNET, "ipc": unix.CLONE_NEWIPC, "uts": unix.CLONE_NEWUTS}

// Run runs f on an OS thread locked to a goroutine of its own and joined
// to target, a namespace of kind ("net", "ipc", "uts"), then returns the
// thread to bulkhead's own namespace. A thread that cannot go back stays
// locked: the Go runtime ends it with the goroutine instead of handing it
// to other code. The error is the join's or the return's, else f's.
func Run(target *os.File, kind string, f func() error) error {
	flag, ok := kinds[kind]
	if !ok {
		return fmt.Errorf("nsthread: a thread cannot join a %s namespace alone", kind)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/" + kind)
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer home.Close()
		if err := unix.Setns(int(target.Fd()), flag); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("enter the %s namespace %s: %w", kind, target.Name(), err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(home.Fd()), flag); err != nil {
			done <- fmt.Errorf("return to bulkhead's own %s namespace: %w", kind, err)
			return
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}
