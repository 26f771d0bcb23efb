// Package seccompexec is the command line between bulkhead and
// bulkhead-seccomp-exec (cmd/bulkhead-seccomp-exec), the static program
// that puts a process started with `runsc exec` under the container's
// seccomp filter.
//
// runsc (gVisor, Debian's 0.0~20221219 and every release before
// google/gvisor#12692) applies the OCI seccomp filter to the container's
// init only: a process it starts for `exec` runs with no filter at all.
// gVisor's kernel (the Sentry) implements seccomp-bpf for the programs it
// runs, so a program inside the sandbox can install the filter on itself
// and then execute the workload, which inherits it across execve as on
// Linux. bulkhead binds that program read-only into every runsc container
// it enforces (at Path) and starts each exec'd process through it:
//
//	BULKHEAD_SECCOMP_FILTER=<filter in hex> /.bulkhead/seccomp-exec -- <the process's args...>
//
// The filter is the classic BPF program libseccomp generates for the
// filter handed to runsc, in the kernel's struct sock_filter layout, host
// byte order. It travels in the process's environment rather than in a
// file next to the program: each exec carries exactly the program bulkhead
// compiled for it, there is no second mount or file to keep in step with
// the handed spec, and the kernel's largest program (4096 instructions,
// 64 KiB as hex) fits in one variable (MAX_ARG_STRLEN is 128 KiB). Not in
// the argument vector, where it was first: runsc quotes an exec's argv in
// its errors, and a person read kilobytes of hex before "failed to find
// initial working directory". The program takes the variable out of the
// environment it hands the workload.
//
// The package is pure Go: the program is static (CGO_ENABLED=0).
package seccompexec
