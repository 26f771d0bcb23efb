package cgroups

import (
	"errors"
	"path/filepath"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	ocgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"
)

// Frozen tells whether the freezer holds process pid's cgroup, read as
// runc reads it to call a container paused: through runc's own cgroup
// library, on the group /proc/<pid>/cgroup names. A host without a
// freezer cannot pause, so its groups are not frozen.
func Frozen(pid int) (bool, error) {
	v2, err := useV2()
	if err != nil {
		return false, err
	}
	empty := &ocgroups.Cgroup{Resources: &ocgroups.Resources{}}
	var m interface {
		GetFreezerState() (ocgroups.FreezerState, error)
	}
	if v2 {
		p, err := cgroup2.PidGroupPath(pid)
		if err != nil {
			return false, err
		}
		if m, err = fs2.NewManager(empty, filepath.Join(defaultV2Mountpoint, p)); err != nil {
			return false, err
		}
	} else {
		p, err := pidPathV1(pid)(cgroup1.Freezer)
		if errors.Is(err, cgroup1.ErrControllerNotActive) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		paths := map[string]string{"freezer": filepath.Join(defaultV1Root, string(cgroup1.Freezer), p)}
		if m, err = fs.NewManager(empty, paths); err != nil {
			return false, err
		}
	}
	st, err := m.GetFreezerState()
	return st == ocgroups.Frozen, err
}
