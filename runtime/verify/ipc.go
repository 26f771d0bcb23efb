package verify

import (
	"fmt"
	"os"
	"strings"

	"bulkhead.dev/bulkhead/runtime/nsthread"
	"bulkhead.dev/bulkhead/specs"
)

// verifyIPC reads back, in the container's own IPC namespace, the System
// V IPC bounds the ipc_limits rule forced (specs.IPCBounds): a sysctl the
// backend skipped or wrote elsewhere fails the check. IPC sysctls answer
// for the namespace of the task that reads them, not of the /proc they
// are read through, so a thread of bulkhead's joins the container's
// namespace to read them.
func verifyIPC(r *Report, pid int, bounds []specs.IPCBound) error {
	if len(bounds) == 0 {
		return nil
	}
	values, err := readIPCSysctls(pid, bounds)
	if err != nil {
		return fmt.Errorf("verify: System V IPC limits of the container: %w", err)
	}
	var expected, observed []string
	ok := true
	for i, b := range bounds {
		bound := "≤ " + joinInts(b.Max)
		if b.Least > 0 {
			bound = joinInts(b.Max)
		}
		value := strings.Join(strings.Fields(values[i]), " ")
		expected = append(expected, b.Key+" "+bound)
		observed = append(observed, b.Key+" "+value)
		ok = ok && b.Holds(value)
	}
	*r = append(*r, Check{Control: "System V IPC", Expected: strings.Join(expected, ", "), Observed: strings.Join(observed, ", "), OK: ok})
	return nil
}

// readIPCSysctls reads each bound's sysctl in pid's IPC namespace.
func readIPCSysctls(pid int, bounds []specs.IPCBound) ([]string, error) {
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/ipc", pid))
	if err != nil {
		return nil, err
	}
	defer target.Close()
	values := make([]string, len(bounds))
	err = nsthread.Run(target, "ipc", func() error {
		for i, b := range bounds {
			data, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(b.Key, ".", "/"))
			if err != nil {
				return err
			}
			values[i] = string(data)
		}
		return nil
	})
	return values, err
}

// ownIPCNamespace tells whether ns has an IPC namespace of its own.
func ownIPCNamespace(ns []Namespace) bool {
	for _, n := range ns {
		if n.File == "ipc" && n.JoinPid == 0 {
			return true
		}
	}
	return false
}

func joinInts(vs []int64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, " ")
}
