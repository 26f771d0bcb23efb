package runtime

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

// freshCgroup makes sure the cgroup bulkhead chose holds no process yet:
// the cgroups_path rule judged the caller's path, this is bulkhead's own.
// It only reads the cgroup tree, through the rules' own view of it.
func freshCgroup(ctx *specs.Context, s *rspec.Spec) error {
	l := s.Linux
	if l == nil || l.CgroupsPath == "" || l.CgroupsPath != s.Annotations[annotationCgroupsPath] || ctx.CgroupOccupied == nil {
		return nil
	}
	busy, err := ctx.CgroupOccupied(l.CgroupsPath)
	switch {
	case err != nil:
		return fmt.Errorf("rule cgroups_path: %s: %w", l.CgroupsPath, err)
	case busy:
		return fmt.Errorf("rule cgroups_path refuses linux.cgroupsPath %s: the cgroup bulkhead chose for this container already holds processes", l.CgroupsPath)
	}
	return nil
}
