package cgroups

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	cgroupsv3 "github.com/containerd/cgroups/v3"
)

// Controller is what a host offers of one controller bulkhead relies on.
type Controller struct {
	Name string
	// Usable: mounted (v1) or enabled for child groups (v2), with the
	// files verification reads present and readable.
	Usable bool
	// Detail says what was found, or what is missing.
	Detail string
}

// Host is the cgroup layout limits are applied and verified in.
type Host struct {
	Version int
	// Root is the v1 hierarchy root or the v2 mountpoint read.
	Root        string
	Controllers []Controller
	// SwapAccounting tells whether memory+swap can be limited and read
	// (v1 memory.memsw.limit_in_bytes, v2 memory.swap.max).
	SwapAccounting bool
	SwapDetail     string
}

// Needed are the controllers bulkhead's boundary relies on: pids, memory
// and cpu limits are applied and read back, devices is the device cgroup.
var Needed = []string{"pids", "memory", "cpu", "devices"}

// Inspect reads which of the Needed controllers the host (or the fixture
// the options name) offers, and whether swap accounting is on. It reads
// only, except on a v2 host whose root has no child group yet: the root
// group has no memory.swap.max, so an empty group is made and removed to
// see whether the kernel gives one (a fixture is never written to).
func Inspect(opts ...Option) (*Host, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.v2Mountpoint != "":
		return inspect2(o.v2Mountpoint, false)
	case o.v1Root != "":
		return inspect1(o.v1Root)
	}
	v2, err := useV2()
	if err != nil {
		return nil, err
	}
	if v2 {
		return inspect2(defaultV2Mountpoint, true)
	}
	return inspect1(defaultV1Root)
}

// v1Files are the files of a v1 hierarchy's root group that show the
// controller is there and readable. pids has no limit file in the root
// group, so its current count stands in.
var v1Files = map[string]string{
	"pids":    "cgroup.procs",
	"memory":  "memory.limit_in_bytes",
	"cpu":     "cpu.cfs_period_us",
	"devices": "devices.list",
}

func inspect1(root string) (*Host, error) {
	if _, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	h := &Host{Version: 1, Root: root}
	for _, name := range Needed {
		c := Controller{Name: name}
		dir := filepath.Join(root, name)
		file := filepath.Join(dir, v1Files[name])
		switch {
		case !isV1Hierarchy(dir):
			c.Detail = fmt.Sprintf("no %s hierarchy at %s", name, dir)
		case !readable(file):
			c.Detail = fmt.Sprintf("%s is not readable", file)
		default:
			c.Usable, c.Detail = true, dir
		}
		h.Controllers = append(h.Controllers, c)
	}
	memsw := filepath.Join(root, "memory", "memory.memsw.limit_in_bytes")
	h.SwapAccounting = readable(memsw)
	h.SwapDetail = memsw
	return h, nil
}

// isV1Hierarchy tells whether dir is a v1 hierarchy: on the host a cgroup
// mount (perhaps through a symlink such as cpu -> cpu,cpuacct), in a
// fixture a directory.
func isV1Hierarchy(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}

func inspect2(mountpoint string, mayProbe bool) (*Host, error) {
	read := func(name string) ([]string, error) {
		data, err := os.ReadFile(filepath.Join(mountpoint, name))
		if err != nil {
			return nil, fmt.Errorf("cgroups: %w", err)
		}
		return strings.Fields(string(data)), nil
	}
	avail, err := read("cgroup.controllers")
	if err != nil {
		return nil, err
	}
	enabled, err := read("cgroup.subtree_control")
	if err != nil {
		return nil, err
	}
	h := &Host{Version: 2, Root: mountpoint}
	for _, name := range Needed {
		c := Controller{Name: name}
		switch {
		case name == "devices":
			// cgroup v2 has no devices controller: the device cgroup is
			// an eBPF program the backend attaches to the group.
			c.Usable, c.Detail = true, "eBPF device filter (cgroup v2 has no devices controller files)"
		case !slices.Contains(avail, name):
			c.Detail = fmt.Sprintf("%s is not in %s/cgroup.controllers (%s)", name, mountpoint, strings.Join(avail, " "))
		case !slices.Contains(enabled, name):
			c.Detail = fmt.Sprintf("%s is not enabled in %s/cgroup.subtree_control (%s)", name, mountpoint, strings.Join(enabled, " "))
		default:
			c.Usable, c.Detail = true, "enabled at "+mountpoint
		}
		h.Controllers = append(h.Controllers, c)
	}
	// The root group has no memory.swap.max: look for it in a child.
	h.SwapDetail = "no group below " + mountpoint + " has memory.swap.max"
	entries, _ := os.ReadDir(mountpoint)
	for _, e := range entries {
		p := filepath.Join(mountpoint, e.Name(), "memory.swap.max")
		if e.IsDir() && readable(p) {
			h.SwapAccounting, h.SwapDetail = true, p
			return h, nil
		}
	}
	if mayProbe && slices.Contains(enabled, "memory") {
		h.SwapAccounting, h.SwapDetail = probeSwap2(mountpoint)
	}
	return h, nil
}

// probeSwap2 makes an empty child group of mountpoint, looks for its
// memory.swap.max and removes it again: a freshly booted v2 host may have
// no group below the root yet, and the root has no swap files.
func probeSwap2(mountpoint string) (bool, string) {
	dir, err := os.MkdirTemp(mountpoint, "bulkhead-doctor-")
	if err != nil {
		return false, fmt.Sprintf("no group below %s has memory.swap.max, and none could be made to look: %v", mountpoint, err)
	}
	defer os.Remove(dir)
	p := filepath.Join(dir, "memory.swap.max")
	if readable(p) {
		return true, p + " (of an empty group made to look)"
	}
	return false, p + " is missing in an empty group made to look"
}

func readable(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Read(make([]byte, 1))
	// An empty file (cgroup.procs of an empty group) reads as EOF: still
	// readable.
	return err == nil || errors.Is(err, io.EOF)
}

// ModeName names the host's cgroup mode as containerd's library sees it.
func ModeName() string {
	switch cgroupsv3.Mode() {
	case cgroupsv3.Unified:
		return "unified (v2)"
	case cgroupsv3.Hybrid:
		return "hybrid (v1 controllers, v2 unified mount without them)"
	case cgroupsv3.Legacy:
		return "legacy (v1)"
	}
	return "unavailable"
}
