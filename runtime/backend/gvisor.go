package backend

import (
	"fmt"
	"slices"
	"strconv"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/specs"
)

// gvisorThreads is the room a gVisor sandbox needs in the host's pids
// cgroup for its own Sentry and gofer threads: below about 128 runsc
// cannot start at all.
const gvisorThreads = 192

// gvisorPidsPerProcess is what one process of the workload costs in the
// host's pids cgroup under the ptrace platform: a stub process per address
// space, with a thread in it for every Sentry thread that has run one of
// its tasks. Measured on 2 CPUs, 40 processes started from an exec'd shell
// took a sandbox from 30 to 476 host pids, about 11 each, and 64 (stopped
// there by RLIMIT_NPROC) to 831. At 3 a sandbox died at its host limit
// once an exec'd shell had started 20: gVisor's own thread creation failed
// before the workload met RLIMIT_NPROC. The workload's bound is
// RLIMIT_NPROC inside; this one only keeps the Sentry's threads bounded.
const gvisorPidsPerProcess = 16

// GVisorHostPids is the host pids.max of a sandbox whose workload may have
// limit processes (enforced inside by RLIMIT_NPROC): at the host limit,
// gVisor's own thread creation fails and the whole sandbox dies.
func GVisorHostPids(limit int64) int64 {
	return limit*gvisorPidsPerProcess + gvisorThreads
}

// TranslateForGVisor adapts the rewritten spec to how runsc enforces it:
// the process limit (translatePidsForGVisor) and the seccomp profile
// (TranslateSeccompForGVisor). It runs after the rules and their
// validation, on the spec handed to runsc only, and returns a decision per
// change.
func TranslateForGVisor(s *rspec.Spec) []specs.Decision {
	ds := translatePidsForGVisor(s)
	if s.Linux != nil && s.Linux.Seccomp != nil {
		for _, n := range TranslateSeccompForGVisor(s.Linux.Seccomp) {
			logrus.Debugf("bulkhead: runsc seccomp: %s", n)
			ds = append(ds, specs.Decision{Rule: "seccomp", Field: "linux.seccomp", Action: specs.Kept,
				Layer: specs.LayerSeccomp, Why: "handed to runsc --oci-seccomp: " + n})
		}
	}
	return ds
}

// translatePidsForGVisor moves the process limit to where gVisor enforces
// it. On the host, pids.max counts the sandbox's own threads, so the cgroup
// gets the profile's limit plus room for them; inside, gVisor's kernel
// enforces RLIMIT_NPROC per sandbox, which carries the profile's limit.
func translatePidsForGVisor(s *rspec.Spec) []specs.Decision {
	if s.Linux == nil || s.Linux.Resources == nil || s.Linux.Resources.Pids == nil || s.Linux.Resources.Pids.Limit == nil {
		return nil
	}
	limit := *s.Linux.Resources.Pids.Limit
	if limit <= 0 {
		return nil
	}
	host := GVisorHostPids(limit)
	s.Linux.Resources.Pids.Limit = &host
	ds := []specs.Decision{{Rule: "pids", Field: "linux.resources.pids.limit", Action: specs.Kept,
		Before: strconv.FormatInt(limit, 10), After: strconv.FormatInt(host, 10), Layer: specs.LayerPids,
		Why: fmt.Sprintf("runsc: the host's pids.max also counts gVisor's own threads (%d per process + %d); the workload's limit %d is RLIMIT_NPROC inside the sandbox", gvisorPidsPerProcess, gvisorThreads, limit)}}
	if s.Process == nil {
		return ds
	}
	nproc := rspec.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: uint64(limit), Soft: uint64(limit)}
	return append(ds, capNproc(s.Process, nproc, "runsc: gVisor's kernel enforces RLIMIT_NPROC per sandbox; it carries the profile's process limit")...)
}

// ExecNprocForGVisor gives a process exec'd on runsc no RLIMIT_NPROC above
// the container's, which carries the profile's process limit inside the
// sandbox (translatePidsForGVisor): the limit an `exec --process` file
// asks for would otherwise be handed to runsc as it is.
func ExecNprocForGVisor(handed *rspec.Spec, p *rspec.Process) []specs.Decision {
	if handed.Process == nil {
		return nil
	}
	for _, r := range handed.Process.Rlimits {
		if r.Type == "RLIMIT_NPROC" {
			return capNproc(p, r, "runsc: gVisor's kernel enforces RLIMIT_NPROC per sandbox; an exec'd process gets no more than the container's, which carries the profile's process limit")
		}
	}
	return nil
}

// capNproc sets p's RLIMIT_NPROC to nproc where it is higher or absent.
func capNproc(p *rspec.Process, nproc rspec.POSIXRlimit, why string) []specs.Decision {
	const field = "process.rlimits[RLIMIT_NPROC]"
	after := fmt.Sprintf("%d/%d", nproc.Soft, nproc.Hard)
	for i, r := range p.Rlimits {
		if r.Type == "RLIMIT_NPROC" {
			if r.Hard <= nproc.Hard && r.Soft <= nproc.Soft {
				return nil
			}
			p.Rlimits[i] = nproc
			return []specs.Decision{{Rule: "pids", Field: field, Action: specs.Tightened,
				Before: fmt.Sprintf("%d/%d", r.Soft, r.Hard), After: after, Layer: specs.LayerRlimit, Why: why}}
		}
	}
	p.Rlimits = append(p.Rlimits, nproc)
	return []specs.Decision{{Rule: "pids", Field: field, Action: specs.Added, After: after, Layer: specs.LayerRlimit, Why: why}}
}

const (
	errnoEPERM  = 1
	errnoENOSYS = 38
)

// gvisorSyscallAliases maps libseccomp's name of a syscall to the name
// runsc's own table gives it, where they differ. runsc --oci-seccomp looks
// every name up in gVisor's syscall table for the native architecture and
// drops a name it does not find ("OCI seccomp: ignoring syscall" in its
// debug log), so an allowed syscall under libseccomp's name would get the
// default action, EPERM. Measured with runsc 0.0~20221219 on x86_64: of
// the profile's allowed x86_64 names it drops pselect6 (its table says
// "pselect"), which broke glibc's select() and pselect(); newer gVisor
// says pselect6 and drops the alias instead, which is as harmless.
var gvisorSyscallAliases = map[string]string{
	"pselect6": "pselect",
}

// TranslateSeccompForGVisor rewrites p, already validated, so that runsc
// --oci-seccomp answers what runc would. It never allows a call the
// profile denies. It returns one note per change, for logs and
// `bulkhead seccomp show`.
//
// errnoRet: runsc's 2022 OCI converter ignores errnoRet and
// defaultErrnoRet, so every SCMP_ACT_ERRNO answers EPERM. For clone3 that
// breaks glibc >= 2.34, which falls back from clone3 to clone only on
// ENOSYS: pthread_create failed with EPERM inside gVisor. Allowing clone3
// and letting gVisor answer would work with that build, which does not
// implement clone3 (measured: ENOSYS without a filter), but a gVisor that
// implements it would then create namespaces through clone3, which seccomp
// cannot inspect. So an ERRNO rule (or default) with errnoRet ENOSYS
// becomes SCMP_ACT_TRACE instead: gVisor's seccomp, like Linux's, answers
// ENOSYS to a TRACE result when no ptrace tracer with
// PTRACE_O_TRACESECCOMP is attached, and none can be: ptrace is denied.
// Any other errnoRet cannot be carried over; the call stays denied, with
// EPERM, and a note says so. The default profile has one errnoRet rule
// (clone3 ENOSYS) and defaultErrnoRet EPERM, so only clone3 changes.
//
// Names runsc does not know at all (x86_64, runsc 2022: openat2,
// landlock_*, memfd_secret, process_mrelease and futex_waitv, none of which
// it implements) cannot be expressed: they get the default action, EPERM,
// where gVisor itself would answer ENOSYS.
func TranslateSeccompForGVisor(p *rspec.LinuxSeccomp) []string {
	if p == nil {
		return nil
	}
	var notes []string
	if p.DefaultAction == rspec.ActErrno && p.DefaultErrnoRet != nil {
		switch *p.DefaultErrnoRet {
		case errnoEPERM:
		case errnoENOSYS:
			p.DefaultAction = rspec.ActTrace
			notes = append(notes, "defaultAction SCMP_ACT_ERRNO(ENOSYS) handed over as SCMP_ACT_TRACE (runsc ignores defaultErrnoRet; no tracer: ENOSYS)")
		default:
			notes = append(notes, fmt.Sprintf("defaultErrnoRet %d: runsc ignores it and answers EPERM (still denied)", *p.DefaultErrnoRet))
		}
	}
	for i := range p.Syscalls {
		r := &p.Syscalls[i]
		if r.Action == rspec.ActLog {
			// runsc refuses the action ("invalid action") and with it
			// the container; it lets the call run, as on runc, unlogged.
			r.Action = rspec.ActAllow
			notes = append(notes, fmt.Sprintf("%v: SCMP_ACT_LOG handed over as SCMP_ACT_ALLOW (runsc has no log action)", r.Names))
		}
		if r.Action == rspec.ActErrno && r.ErrnoRet != nil {
			switch *r.ErrnoRet {
			case errnoEPERM:
			case errnoENOSYS:
				r.Action = rspec.ActTrace
				notes = append(notes, fmt.Sprintf("%v: SCMP_ACT_ERRNO(ENOSYS) handed over as SCMP_ACT_TRACE (runsc ignores errnoRet; no tracer: ENOSYS)", r.Names))
			default:
				notes = append(notes, fmt.Sprintf("%v: errnoRet %d: runsc ignores it and answers EPERM (still denied)", r.Names, *r.ErrnoRet))
			}
		}
		for _, n := range r.Names {
			if alias, ok := gvisorSyscallAliases[n]; ok && !slices.Contains(r.Names, alias) {
				r.Names = append(r.Names, alias)
				notes = append(notes, fmt.Sprintf("%s: also named %q, as runsc's syscall table calls it", n, alias))
			}
		}
	}
	return notes
}
