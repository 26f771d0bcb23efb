package verify

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

// Namespace is one namespace of the handed spec as the kernel must have
// applied it: a new one, or the one of the process the path names.
//
// A path names a process only by its pid, and the kernel opens it when
// the backend joins, after the rules judged it: had the pod sandbox's
// init died in between and its pid gone to another process (a host
// service, another tenant's container), the container would be in that
// process's namespace. So a joined namespace holds only when the
// container's is the one of the process at the pid now, and that process
// is still the sandbox's init bulkhead recorded (its start time), read
// after the namespace: a process that still lives never gave its pid
// away.
type Namespace struct {
	// File is the namespace's name under /proc/<pid>/ns.
	File string
	// JoinPid is the pid of the process whose namespace the spec joins;
	// 0 for a new namespace, -1 for a path that names no process's.
	JoinPid int
	// JoinRuns tells whether JoinPid is still the process bulkhead
	// recorded (JoinedInit); nil when none is known, and the check fails.
	JoinRuns func() bool
}

func expectNamespaces(s *rspec.Spec) []Namespace {
	if s.Linux == nil {
		return nil
	}
	var ns []Namespace
	for _, n := range s.Linux.Namespaces {
		if n.Type == rspec.UserNamespace || n.Type == rspec.TimeNamespace {
			continue // never handed over
		}
		e := Namespace{File: specs.NamespaceFile(n.Type)}
		if n.Path != "" {
			e.JoinPid = -1
			if pid, ok := specs.NamespacePathPid(n.Path, n.Type); ok {
				e.JoinPid = pid
			}
		}
		ns = append(ns, e)
	}
	return ns
}

// JoinedInit says the namespaces joined from pid are those of a process
// bulkhead recorded (a pod sandbox's init); runs tells whether pid is
// still that process.
func (e *Expectation) JoinedInit(pid int, runs func() bool) {
	for i := range e.Namespaces {
		if e.Namespaces[i].JoinPid == pid {
			e.Namespaces[i].JoinRuns = runs
		}
	}
}

// verifyNamespaces checks each namespace of pid against ns: a new one is
// neither bulkhead's own nor the host's (pid 1's), a joined one is the
// recorded process's, which still runs.
func verifyNamespaces(r *Report, pid int, ns []Namespace) error {
	for _, n := range ns {
		ino, err := nsInode(fmt.Sprintf("/proc/%d/ns/%s", pid, n.File))
		if err != nil {
			return err
		}
		observed := fmt.Sprintf("%s:[%d]", n.File, ino)
		control := n.File + " namespace"
		if n.JoinPid == 0 {
			self, err := nsInode("/proc/self/ns/" + n.File)
			if err != nil {
				return err
			}
			ok := ino != self
			if host, err := nsInode("/proc/1/ns/" + n.File); err == nil && host == ino {
				ok = false
			}
			*r = append(*r, Check{Control: control, Expected: "its own " + n.File + " namespace", Observed: observed, OK: ok})
			continue
		}
		expected := fmt.Sprintf("the %s namespace of pod sandbox init %d", n.File, n.JoinPid)
		ok := false
		if n.JoinPid > 1 && n.JoinRuns != nil {
			theirs, err := nsInode(fmt.Sprintf("/proc/%d/ns/%s", n.JoinPid, n.File))
			ok = err == nil && theirs == ino && n.JoinRuns()
			if err == nil {
				expected += fmt.Sprintf(" (%s:[%d])", n.File, theirs)
			}
		}
		if !ok {
			expected += ", which still runs as the process bulkhead recorded"
		}
		*r = append(*r, Check{Control: control, Expected: expected, Observed: observed, OK: ok})
	}
	return nil
}
