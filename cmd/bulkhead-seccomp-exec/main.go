// Command bulkhead-seccomp-exec installs a seccomp filter on itself and
// executes a command, which inherits the filter. bulkhead starts every
// process of a runsc exec through it, because runsc applies the
// container's filter to the init only (see runtime/seccompexec):
//
//	BULKHEAD_SECCOMP_FILTER=<BPF program in hex> bulkhead-seccomp-exec -- <command> [args...]
//
// It fails closed: when the filter cannot be decoded or installed, or the
// command cannot be found or executed, it says why on stderr and exits
// non-zero; it never executes the command without the filter. The command
// keeps its stdin, stdout, stderr, environment (less the filter's
// variable), working directory and argv (argv[0] included), so its output
// and exit status are its own.
//
// The binary must be static (CGO_ENABLED=0): it runs in the container's
// root filesystem, which may have no libc or another one.
package main

import (
	"fmt"
	"os"
	"runtime"

	"bulkhead.dev/bulkhead/runtime/seccompexec"
)

// Exit statuses as a shell gives them: found but not runnable (a filter
// that cannot be installed counts as that), and not found.
const (
	exitCannotRun = 126
	exitNotFound  = 127
)

func main() {
	code, err := run(os.Args)
	fmt.Fprintf(os.Stderr, "%s: %v\n", seccompexec.Binary, err)
	os.Exit(code)
}

// run returns only on failure: the exit status and why.
func run(argv []string) (int, error) {
	// The filter is installed on this thread and execve must run on the
	// same one: a Go program's threads are the runtime's to switch.
	runtime.LockOSThread()
	filter, args, env, err := seccompexec.Parse(argv, os.Environ())
	if err != nil {
		return exitCannotRun, err
	}
	// Resolved before the filter is installed, so that the lookup's own
	// system calls cannot be what the filter denies.
	path, err := lookup(args[0], env)
	if err != nil {
		return exitNotFound, err
	}
	if err := install(filter); err != nil {
		return exitCannotRun, err
	}
	return exitCannotRun, execve(path, args, env)
}
