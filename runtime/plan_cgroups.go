package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/specs"
)

func nowUTC() time.Time { return time.Now().UTC() }

const annotationCgroupsPath = specs.AnnotationCgroupsPath

// DefaultCgroupsPath is where a container whose caller named no cgroup
// lives: below /bulkhead, unique per state root and id, so containers of
// the same id under two engines never share one.
func DefaultCgroupsPath(root, id string) string {
	return specs.BulkheadCgroupParent + "/" + id + "-" + sha([]byte(root))[:8]
}

// DefaultSystemdCgroupsPath is the same under the systemd driver
// (--systemd-cgroup), as slice:prefix:name: a scope of its own in
// bulkhead.slice. The backend's own default, system.slice:runc:<id>, is one
// scope for every container of that id on the host, and the driver joins
// a scope that exists.
func DefaultSystemdCgroupsPath(root, id string) string {
	return specs.BulkheadSystemdSlice + ":bulkhead:" + id + "-" + sha([]byte(root))[:8]
}

// chooseCgroupsPath gives the handed spec an explicit cgroups path when the
// caller set none, so bulkhead can verify the container's limits and remove
// a cgroup that a failed create leaves behind. The annotation marks the
// path as bulkhead's own, so a later create from the rewritten config.json
// gets a path of its own again.
func chooseCgroupsPath(s *rspec.Spec, g *Globals, id string) []specs.Decision {
	if s.Linux == nil {
		return nil
	}
	before := s.Linux.CgroupsPath
	if before != "" && s.Annotations[annotationCgroupsPath] != before {
		return nil
	}
	path := DefaultCgroupsPath(g.Root, id)
	if g.SystemdCgroup {
		path = DefaultSystemdCgroupsPath(g.Root, id)
	}
	s.Linux.CgroupsPath = path
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	beforeAnnotation := s.Annotations[annotationCgroupsPath]
	s.Annotations[annotationCgroupsPath] = path
	action := specs.Added
	if before != "" {
		action = specs.Tightened
	}
	if before == path {
		action = specs.Kept
	}
	return []specs.Decision{
		{Rule: "cgroups_path", Field: "linux.cgroupsPath", Action: action, Before: before, After: path,
			Layer: specs.LayerNone, Why: "bulkhead's own cgroup for this container, so its limits can be verified and a cgroup a failed create leaves behind removed"},
		{Rule: "cgroups_path", Field: "annotations[" + annotationCgroupsPath + "]", Action: action, Before: beforeAnnotation, After: path,
			Layer: specs.LayerNone, Why: "marks linux.cgroupsPath as bulkhead's choice, not the caller's"},
	}
}

// sha is the hex SHA-256 of data.
func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// freshCgroup makes sure the cgroup bulkhead chose holds no process yet:
// the cgroups_path rule judged the caller's path, this is bulkhead's own.
// It only reads the cgroup tree, through the rules' own view of it.
func freshCgroup(ctx *specs.Context, s *rspec.Spec) error {
	l := s.Linux
	if l == nil || l.CgroupsPath == "" || l.CgroupsPath != s.Annotations[annotationCgroupsPath] {
		return nil
	}
	group := l.CgroupsPath
	if ctx.SystemdCgroup {
		var err error
		if group, err = specs.SystemdScopePath(group); err != nil {
			return fmt.Errorf("rule cgroups_path: %s: %w", l.CgroupsPath, err)
		}
	}
	busy, err := cgroups.Occupied(group)
	switch {
	case err != nil:
		return fmt.Errorf("rule cgroups_path: %s: %w", group, err)
	case busy:
		return fmt.Errorf("rule cgroups_path refuses linux.cgroupsPath %s: the cgroup bulkhead chose for this container (%s) already holds processes", l.CgroupsPath, group)
	}
	return nil
}

// gvisorSystemdRefusal refuses the systemd driver for runsc on a cgroup
// v1 host, before runsc runs: runsc 20221219 there takes the driver's
// slice:prefix:name for a literal group below its caller's own, which the
// cgroups rule never judged (create's verification failed every such
// container), and no one removes the nine groups it made.
func gvisorSystemdRefusal() error {
	v2, err := cgroups.V2()
	if err != nil || v2 {
		return err
	}
	return fmt.Errorf("rule cgroups_path refuses --systemd-cgroup on a gVisor backend on this cgroup v1 host: runsc makes the driver's " +
		"slice:prefix:name a literal group below its caller's own, which no rule judged and no one removes; use the cgroupfs driver " +
		"(no --systemd-cgroup, or an engine runtime entry without SystemdCgroup) for runsc")
}
