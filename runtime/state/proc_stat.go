package state

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// procStat is the state letter and start time (in clock ticks since boot)
// of pid, from the host's /proc/<pid>/stat: what libcontainer's
// system.Stat reads, without the private procfs mount it makes for each
// call (fsopen and fsmount, about 0.3 ms of CPU) to guard against a /proc
// inside a container's mount namespace. bulkhead reads the host's /proc,
// which no container can reach.
func procStat(pid int) (state byte, start uint64, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name may hold spaces and parentheses: the fields
	// after it start after its last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, errors.New("/proc/" + strconv.Itoa(pid) + "/stat: no command name")
	}
	// Fields 3 (state) to 22 (starttime), counted from 1 in proc(5).
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, errors.New("/proc/" + strconv.Itoa(pid) + "/stat: too few fields")
	}
	start, err = strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, 0, err
	}
	return fields[0][0], start, nil
}
