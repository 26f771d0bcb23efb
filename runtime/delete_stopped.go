package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	ocgroups "github.com/opencontainers/cgroups"
	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/cgroups"
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
	if !st.decode(data) || state.Alive(st.InitPid, st.InitStart) {
		return false, nil
	}
	if err := killLeftovers(g, b, id, st.CgroupPaths); err != nil {
		return true, err
	}
	if !st.onlyDestroy() {
		return false, nil
	}
	if err := cgroups.RemovePaths(st.CgroupPaths); err != nil {
		return true, err
	}
	return true, os.RemoveAll(dir)
}

// leftoversDeadline bounds the wait for killed leftovers to leave the
// container's cgroups; it ends on evidence, and a loaded host's exits
// (a process with much memory mapped) are slow.
const leftoversDeadline = 15 * time.Second

// killLeftovers kills what still runs in a stopped container's cgroups.
// runc calls a container stopped once its init is gone or a zombie, and a
// zombie leader's other threads still run: a job that ends its main thread
// with exit(2) keeps going. With a pid namespace of its own runc's delete
// then kills nothing, and the threads would outlive the container. So a
// stopped container whose groups still hold a task gets runc's kill --all
// (freeze, kill, thaw) before anything is removed, whether bulkhead or
// runc removes it.
func killLeftovers(g *Globals, b *backend.Backend, id string, paths map[string]string) error {
	if !holdsTasks(paths) {
		return nil
	}
	logrus.Warnf("bulkhead: delete %s: the init has ended but its cgroup still holds processes; killing them", id)
	if err := backend.Quietly(g.backendArgv(b, "kill", "--all", id, "KILL")); err != nil {
		return fmt.Errorf("delete %s: the init has ended but its cgroup still holds processes, and kill --all failed: %w", id, err)
	}
	for deadline := time.Now().Add(leftoversDeadline); holdsTasks(paths); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("delete %s: processes still in its cgroup %s after kill --all; kill them and delete again", id, leftoversDeadline)
		}
	}
	return nil
}

// holdsTasks tells whether any process is in the groups, read from one
// hierarchy (every task is in each) with runc's cgroup library; a group
// that cannot be read counts as holding one.
func holdsTasks(paths map[string]string) bool {
	for _, controller := range []string{"pids", "", "memory", "freezer"} {
		p, ok := paths[controller]
		if !ok {
			continue
		}
		pids, err := ocgroups.GetAllPids(p)
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		return err != nil || len(pids) > 0
	}
	return false
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
	// unknownKey is set by decode for a key runcStateKeys does not hold.
	unknownKey bool
}

// cgroupRoot is where every group runc's cgroupfs driver makes lies.
const cgroupRoot = "/sys/fs/cgroup/"

// runcStateFile is runc's state.json with every top-level key runc 1.0 to
// 1.3 write, decoded with unknown keys refused: a state with any other was
// written by a runc that may do more on delete, which it then does
// itself. The config stays raw but for the members onlyDestroy reads, so
// its large parts (mounts, the seccomp profile) are scanned, not decoded.
type runcStateFile struct {
	ID                  json.RawMessage            `json:"id"`
	InitPid             int                        `json:"init_process_pid"`
	InitStart           uint64                     `json:"init_process_start"`
	Created             json.RawMessage            `json:"created"`
	Config              map[string]json.RawMessage `json:"config"`
	Rootless            bool                       `json:"rootless"`
	CgroupPaths         map[string]string          `json:"cgroup_paths"`
	NamespacePaths      json.RawMessage            `json:"namespace_paths"`
	ExternalDescriptors json.RawMessage            `json:"external_descriptors"`
	IntelRdtPath        string                     `json:"intel_rdt_path"`
}

func (s *runcState) decode(data []byte) bool {
	var f runcStateFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(&f) != nil {
		// A key runc 1.0 to 1.3 do not write, or no JSON: runc deletes
		// it, after leftovers are killed by the groups read leniently.
		s.unknownKey = true
		return json.Unmarshal(data, s) == nil
	}
	s.InitPid, s.InitStart, s.Rootless, s.CgroupPaths, s.IntelRdtPath = f.InitPid, f.InitStart, f.Rootless, f.CgroupPaths, f.IntelRdtPath
	members := map[string]any{"cgroups": &s.Config.Cgroups, "namespaces": &s.Config.Namespaces, "hooks": &s.Config.Hooks}
	for key, raw := range f.Config {
		// Matched as encoding/json matches a struct's fields.
		if dst, ok := members[strings.ToLower(key)]; ok && json.Unmarshal(raw, dst) != nil {
			return false
		}
	}
	return true
}

// onlyDestroy is whether runc's delete would only remove the cgroups and
// the state directory.
func (s *runcState) onlyDestroy() bool {
	c := &s.Config
	if s.unknownKey || s.Rootless || s.IntelRdtPath != "" || c.Cgroups == nil || c.Cgroups.Systemd || c.Cgroups.Rootless ||
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
