package runtime

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	ocgroups "github.com/opencontainers/cgroups"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
)

// deleteStopped removes a stopped runc container as `runc delete` does
// (libcontainer's destroy: its cgroups, through runc's own cgroup
// library, then its state directory), in bulkhead's process rather than
// a second one, which cost a delete as much as all of bulkhead's own
// work. It handles a container only when that is all runc would do:
// runc's state in a layout bulkhead knows entirely, the init gone, the
// cgroupfs driver, a pid namespace of its own (nothing left to kill), no
// poststop hook, no Intel RDT group, not rootless. handled is false
// otherwise, and the caller runs runc's delete.
func deleteStopped(g *Globals, b *backend.Backend, id string) (handled bool, err error) {
	if b.Kind() != "runc" {
		return false, nil
	}
	dir := filepath.Join(state.BackendRoot(g.Root, b.Name), id)
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return false, nil
	}
	var st runcState
	if !st.decode(data) || !st.onlyDestroy() || state.Alive(st.InitPid, st.InitStart) {
		return false, nil
	}
	if err := ocgroups.RemovePaths(st.CgroupPaths); err != nil {
		return true, err
	}
	return true, os.RemoveAll(dir)
}

// runcState is what of runc's state.json (libcontainer's State) says what
// its delete of a stopped container does.
type runcState struct {
	InitPid      int               `json:"init_process_pid"`
	InitStart    uint64            `json:"init_process_start"`
	Rootless     bool              `json:"rootless"`
	CgroupPaths  map[string]string `json:"cgroup_paths"`
	IntelRdtPath string            `json:"intel_rdt_path"`
	Config       struct {
		Cgroups *struct {
			Systemd  bool `json:"Systemd"`
			Rootless bool `json:"Rootless"`
		} `json:"cgroups"`
		Namespaces []struct {
			Type string `json:"type"`
			Path string `json:"path"`
		} `json:"namespaces"`
		Hooks map[string][]json.RawMessage `json:"Hooks"`
	} `json:"config"`
}

// cgroupRoot is where every group runc's cgroupfs driver makes lies.
const cgroupRoot = "/sys/fs/cgroup/"

// runcStateKeys are the top-level keys of the state runc 1.0 to 1.3
// write. A state with any other was written by a runc that may do more
// on delete, which it then does itself.
var runcStateKeys = map[string]bool{
	"id": true, "init_process_pid": true, "init_process_start": true, "created": true, "config": true,
	"rootless": true, "cgroup_paths": true, "namespace_paths": true, "external_descriptors": true,
	"intel_rdt_path": true,
}

func (s *runcState) decode(data []byte) bool {
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) != nil {
		return false
	}
	for k := range keys {
		if !runcStateKeys[k] {
			return false
		}
	}
	return json.NewDecoder(bytes.NewReader(data)).Decode(s) == nil
}

// onlyDestroy is whether runc's delete would only remove the cgroups and
// the state directory.
func (s *runcState) onlyDestroy() bool {
	c := &s.Config
	if s.Rootless || s.IntelRdtPath != "" || c.Cgroups == nil || c.Cgroups.Systemd || c.Cgroups.Rootless ||
		len(s.CgroupPaths) == 0 || len(c.Hooks["poststop"]) > 0 {
		return false
	}
	for _, p := range s.CgroupPaths {
		if !strings.HasPrefix(p, cgroupRoot) {
			return false
		}
	}
	for _, ns := range c.Namespaces {
		if ns.Type == "NEWPID" {
			return ns.Path == ""
		}
	}
	return false
}
