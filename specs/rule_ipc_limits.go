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

// ipcBound is one namespaced IPC sysctl and the largest value of each of
// its fields the policy lets stand; a bound of -1 is the memory limit
// (in bytes, or in pages for shmall).
type ipcBound struct {
	key    string
	bounds []int64
	why    string
}

const fromMemory = -1

var ipcBounds = []ipcBound{
	{"kernel.shmmax", []int64{fromMemory}, "no shared memory segment larger than the memory limit"},
	{"kernel.shmall", []int64{fromMemory}, "the namespace's segments together no larger than the memory limit (in pages)"},
	{"kernel.msgmni", []int64{64}, "64 message queues"},
	{"kernel.msgmnb", []int64{16384}, "16 KiB per message queue (the kernel's default): 1 MiB in all"},
	{"kernel.msgmax", []int64{8192}, "8 KiB per message (the kernel's default)"},
	{"kernel.sem", []int64{250, 32000, 32, 128}, "semaphores as the kernel counted them before 3.19 (SEMMSL SEMMNS SEMOPM SEMMNI)"},
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
	set := func(key, value, why string) {
		before, had := l.Sysctl[key]
		if had && before == value {
			return
		}
		d := Decision{Rule: rule, Field: "linux.sysctl[" + key + "]", Action: Added, Before: "unset", After: value, Layer: LayerNamespaces, Why: why}
		if had {
			d.Action, d.Before = Tightened, before
		}
		l.Sysctl[key] = value
		ds = append(ds, d)
	}
	set("kernel.shm_rmid_forced", "1", "a shared memory segment is removed with the last process attached to it, so none outlives the container in its IPC namespace")
	for _, b := range ipcBounds {
		bounds := make([]int64, len(b.bounds))
		for i, v := range b.bounds {
			bounds[i] = v
			if v == fromMemory {
				if memory <= 0 {
					bounds = nil
					break
				}
				bounds[i] = memory
				if b.key == "kernel.shmall" {
					bounds[i] = memory / int64(os.Getpagesize())
				}
			}
		}
		if bounds == nil {
			continue // no memory limit to bound shared memory by
		}
		set(b.key, clampFields(l.Sysctl[b.key], bounds), b.why)
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
