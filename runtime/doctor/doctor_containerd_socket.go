package doctor

import (
	"fmt"
	"os"
	"syscall"

	"github.com/pelletier/go-toml/v2"
)

// defaultContainerdSocket is containerd's API socket when its
// configuration names none ([grpc] address).
const defaultContainerdSocket = "/run/containerd/containerd.sock"

// ContainerdSocket judges who may speak containerd's API: a client of it
// names the shim binary that serves its task (a task's runtime_path) and,
// on containerd 2.x, a sandbox record that routes its container to any
// shim, so bulkhead's shim is no boundary for whoever may connect. Only
// root may, by the socket's mode and owner; connecting to a Unix socket
// takes write permission on it.
func ContainerdSocket(config string) Check {
	c := Check{Name: "containerd socket"}
	path := defaultContainerdSocket
	if data, err := os.ReadFile(config); err == nil {
		var doc struct {
			GRPC struct {
				Address string `toml:"address"`
			} `toml:"grpc"`
		}
		if err := toml.Unmarshal(data, &doc); err == nil && doc.GRPC.Address != "" {
			path = doc.GRPC.Address
		}
	}
	c.Looked = path
	st, err := os.Stat(path)
	if os.IsNotExist(err) {
		c.Status, c.Found = StatusOK, "absent: no containerd serves its API here"
		return c
	}
	if err != nil {
		c.Status, c.Found = StatusWarn, err.Error()
		return c
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		c.Status, c.Found = StatusWarn, "owner unknown"
		return c
	}
	perm := st.Mode().Perm()
	c.Found = fmt.Sprintf("mode %04o, %s", perm, OwnerOf(st))
	var who string
	switch {
	case perm&0o002 != 0:
		who = "anyone"
	case sys.Uid != 0:
		who = fmt.Sprintf("uid %d", sys.Uid)
	case perm&0o020 != 0 && sys.Gid != 0:
		who = fmt.Sprintf("group %d", sys.Gid)
	}
	if who == "" {
		c.Status = StatusOK
		c.Found += ": only root may connect"
		return c
	}
	c.Status = StatusWarn
	c.Found += ": " + who + " may speak containerd's API, which lets a client name the shim binary that serves its task (runtime_path) and, on containerd 2.x, route its container to any shim by a sandbox record: bulkhead's shim is no boundary for them"
	c.Fix = "keep the socket root's alone ([grpc] uid = 0, gid = 0 in " + config + "), and give tenants containerd through CRI or a gate that fixes the runtime and refuses runtime_path, sandbox records and task API addresses"
	return c
}
