package specs

import (
	"os"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// System V IPC objects live in their IPC namespace, not in a process: a
// shared memory segment left without IPC_RMID, a message queue, a
// semaphore set outlive the process and the container that made them for
// as long as the namespace does. A pod's members share the sandbox's, so
// a member that filled a segment and was deleted (and the kubelet starts
// it again) left its pages charged to a memory cgroup that no longer
// limits anything: 200 MiB more on the host per restart, until the pod
// went. In every IPC namespace a container makes, ruleIPCLimits forces
// the kernel's own bounds: a segment goes with the last process attached
// to it (kernel.shm_rmid_forced), the segments of the namespace together
// hold at most the memory limit, message queues at most 1 MiB, semaphores
// the kernel's defaults before 3.19.

// IPCBound is one namespaced IPC sysctl and the largest value of each of
// its whitespace-separated fields the policy lets stand; Least, where not
// 0, is the one value the field may have (kernel.shm_rmid_forced).
type IPCBound struct {
	Key   string
	Max   []int64
	Least int64
	Why   string
}

// IPCBounds are the bounds of an IPC namespace of a container whose
// memory limit is memory bytes (0: none, and shared memory is left
// unbounded but for shm_rmid_forced). The rule forces them and
// verification reads them back from the namespace.
func IPCBounds(memory int64) []IPCBound {
	bs := []IPCBound{{Key: "kernel.shm_rmid_forced", Max: []int64{1}, Least: 1,
		Why: "a shared memory segment is removed with the last process attached to it, so none outlives the container in its IPC namespace"}}
	if memory > 0 {
		bs = append(bs,
			IPCBound{Key: "kernel.shmmax", Max: []int64{memory}, Why: "no shared memory segment larger than the memory limit"},
			IPCBound{Key: "kernel.shmall", Max: []int64{memory / int64(os.Getpagesize())}, Why: "the namespace's segments together no larger than the memory limit (in pages)"})
	}
	return append(bs,
		IPCBound{Key: "kernel.msgmni", Max: []int64{64}, Why: "64 message queues"},
		IPCBound{Key: "kernel.msgmnb", Max: []int64{16384}, Why: "16 KiB per message queue (the kernel's default): 1 MiB in all"},
		IPCBound{Key: "kernel.msgmax", Max: []int64{8192}, Why: "8 KiB per message (the kernel's default)"},
		IPCBound{Key: "kernel.sem", Max: []int64{250, 32000, 32, 128}, Why: "semaphores as the kernel counted them before 3.19 (SEMMSL SEMMNS SEMOPM SEMMNI)"})
}

// Holds tells whether value, as a sysctl file or a spec gives it, is
// within the bound.
func (b IPCBound) Holds(value string) bool {
	fields := strings.Fields(value)
	if len(fields) != len(b.Max) {
		return false
	}
	for i, f := range fields {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil || v < b.Least || v > b.Max[i] {
			return false
		}
	}
	return true
}

func ruleIPCLimits(c *Context, s *rspec.Spec) []Decision {
	const rule = "ipc_limits"
	l := ensureLinux(s)
	if !ownNamespace(l, rspec.IPCNamespace) {
		return nil // a pod member's namespace is its sandbox's, bounded there
	}
	memory, err := c.Profile.MemoryBytes()
	if err != nil {
		return []Decision{{Rule: rule, Field: "linux.sysctl", Action: Refused, Layer: LayerNone, Why: "profile: " + err.Error()}}
	}
	if l.Sysctl == nil {
		l.Sysctl = map[string]string{}
	}
	var ds []Decision
	for _, b := range IPCBounds(memory) {
		before, had := l.Sysctl[b.Key]
		value := clampFields(before, b.Max)
		if b.Least > 0 {
			value = strconv.FormatInt(b.Least, 10)
		}
		if had && before == value {
			continue
		}
		d := Decision{Rule: rule, Field: "linux.sysctl[" + b.Key + "]", Action: Added, Before: "unset", After: value, Layer: LayerNamespaces, Why: b.Why}
		if had {
			d.Action, d.Before = Tightened, before
		}
		l.Sysctl[b.Key] = value
		ds = append(ds, d)
	}
	return ds
}

// clampFields is value, a sysctl of whitespace-separated numbers, with
// each field at most its bound; a field missing or not a number below
// its bound is the bound.
func clampFields(value string, bounds []int64) string {
	fields := strings.Fields(value)
	out := make([]string, len(bounds))
	for i, bound := range bounds {
		n := bound
		if i < len(fields) {
			if v, err := strconv.ParseInt(fields[i], 10, 64); err == nil && v >= 0 && v < bound {
				n = v
			}
		}
		out[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(out, " ")
}
