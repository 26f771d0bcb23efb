package verify

import (
	"fmt"
	"path"
	"reflect"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/seccomp"
	"bulkhead.dev/bulkhead/specs"
)

// Expectation is what Container holds the kernel to. It is derived from the
// profile, not from the rules' output: a rule that stops setting a control
// does not stop its verification. The spec handed to the backend only
// makes it stricter where it asks for less than the profile allows (a
// lower limit, a particular uid, supplementary groups it must get).
type Expectation struct {
	// Backend is the kind of backend: runc, crun or runsc.
	Backend string

	// Seccomp is the profile's filter as libseccomp compiles it.
	Seccomp seccomp.Compiled
	// NonRootUID and NonRootGID: the profile demotes uid/gid 0, so the
	// process must have none of them (real, effective, saved, fs) and no
	// supplementary group 0.
	NonRootUID, NonRootGID bool
	// User is the identity of the handed spec, which the process must
	// have exactly; nil where no spec names one.
	User *rspec.User
	// LoopbackOnly: the profile's network is none.
	LoopbackOnly bool
	ReadonlyRoot bool

	// Ceilings, 0 for none. PidsMax already includes the room a gVisor
	// sandbox needs for its own threads.
	PidsMax   int64
	MemoryMax int64
	// CPUs is the largest quota/period ratio.
	CPUs float64
	// Cgroup is the group the process must be in, as the host's
	// /proc/PID/cgroup names it: the one the cgroups_path rule judged
	// and create claimed; "" where it is not known. Expect takes an
	// absolute cgroupsPath as cgroupfs reads it; create sets the scope
	// under the systemd driver.
	Cgroup string

	// Namespaces are the handed spec's namespaces (runc, crun): each new
	// or the one of the process it joins.
	Namespaces []Namespace
	// IPC are the System V IPC bounds of a container's own IPC namespace
	// (runc, crun); none where it joins its pod's, bounded at the pod's
	// create, and none inside gVisor, whose kernel keeps its own.
	IPC []specs.IPCBound

	// Mounts are the handed spec's mounts (runc, crun); MaskedPaths and
	// ReadonlyPaths the profile's, with the handed spec's. Inside gVisor
	// the host sees none of them.
	Mounts                     []MountExpectation
	MaskedPaths, ReadonlyPaths []string

	// WorkloadRan says the process may already have run code of its own
	// (an exec'd process), which may have stacked filters of its own on
	// bulkhead's: they can only deny more.
	WorkloadRan bool
}

// Expect derives the expectation for a container of profile p whose
// backend got handed (nil when there is none, as for an exec's process
// alone).
func Expect(p *specs.Profile, handed *rspec.Spec, kind string) (*Expectation, error) {
	e := &Expectation{
		Backend:      kind,
		NonRootUID:   p.UID != 0,
		NonRootGID:   p.GID != 0,
		LoopbackOnly: p.Network == specs.NetworkNone,
		ReadonlyRoot: p.ReadonlyRootfs,
		PidsMax:      p.PidsLimit,
		CPUs:         p.CPUs,
	}
	var err error
	if e.MemoryMax, err = p.MemoryBytes(); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	// The IPC bounds follow the profile's limit, as the rule sets them,
	// not a lower one of the caller's.
	profileMemory := e.MemoryMax
	policy, compiled, err := seccomp.ForProfileCompiled(p.Seccomp, p.CompatSyscalls, p.ExecutesWrites())
	if err != nil {
		return nil, fmt.Errorf("verify: the profile's seccomp filter: %w", err)
	}
	e.Seccomp = compiled
	if handed != nil && handed.Linux != nil && handed.Linux.Seccomp != nil {
		if e.Seccomp, err = handedSeccomp(handed.Linux.Seccomp, policy, compiled); err != nil {
			return nil, err
		}
	}
	if kind == "runsc" && e.PidsMax > 0 {
		e.PidsMax = backend.GVisorHostPids(e.PidsMax)
	}
	if handed != nil {
		if l := handed.Linux; l != nil && strings.HasPrefix(l.CgroupsPath, "/") {
			e.Cgroup = path.Clean(l.CgroupsPath)
		}
		e.tighten(handed)
		if kind != "runsc" {
			e.Namespaces = expectNamespaces(handed)
			if ownIPCNamespace(e.Namespaces) {
				e.IPC = specs.IPCBounds(profileMemory)
			}
			e.Mounts = expectMounts(handed)
		}
	}
	if kind != "runsc" {
		e.MaskedPaths, e.ReadonlyPaths = expectPaths(handed)
	}
	return e, nil
}

// tighten lowers the expectation to what the handed spec asks where that
// is stricter than the profile.
func (e *Expectation) tighten(s *rspec.Spec) {
	if s.Process != nil {
		u := s.Process.User
		e.User = &u
	}
	if s.Root != nil && s.Root.Readonly {
		e.ReadonlyRoot = true
	}
	if s.Linux == nil || s.Linux.Resources == nil {
		return
	}
	r := s.Linux.Resources
	if r.Pids != nil && r.Pids.Limit != nil && *r.Pids.Limit > 0 && (e.PidsMax == 0 || *r.Pids.Limit < e.PidsMax) {
		e.PidsMax = *r.Pids.Limit
	}
	if m := r.Memory; m != nil && m.Limit != nil && *m.Limit > 0 && (e.MemoryMax == 0 || *m.Limit < e.MemoryMax) {
		e.MemoryMax = *m.Limit
	}
	if c := r.CPU; c != nil && c.Quota != nil && c.Period != nil && *c.Quota > 0 && *c.Period > 0 {
		if ratio := float64(*c.Quota) / float64(*c.Period); e.CPUs == 0 || ratio < e.CPUs {
			e.CPUs = ratio
		}
	}
}

// handedSeccomp is the filter the kernel must hold: the profile's, or the
// one handed over when the seccomp rule narrowed the profile's with the
// caller's (seccomp.Combine) and it is provably within the profile's. Any
// other handed filter leaves the profile's as the expectation, which the
// loaded filter then fails to match.
func handedSeccomp(handed, policy *rspec.LinuxSeccomp, compiled seccomp.Compiled) (seccomp.Compiled, error) {
	if reflect.DeepEqual(handed, policy) || !seccomp.WithinPolicy(handed, policy) {
		return compiled, nil
	}
	c, err := seccomp.CompiledFor(handed)
	if err != nil {
		return seccomp.Compiled{}, fmt.Errorf("verify: the handed seccomp filter: %w", err)
	}
	return c, nil
}

// NarrowedSeccomp is the handed filter when it is not the profile's own
// (the seccomp rule narrowed it with the caller's), for the record: an
// exec'd process runs under the container's filter. Nil otherwise.
func NarrowedSeccomp(p *specs.Profile, handed *rspec.LinuxSeccomp) *rspec.LinuxSeccomp {
	policy, err := seccomp.ForProfile(p.Seccomp, p.CompatSyscalls, p.ExecutesWrites())
	if err != nil || handed == nil || reflect.DeepEqual(handed, policy) {
		return nil
	}
	return handed
}
