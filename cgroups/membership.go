package cgroups

import (
	"fmt"
	"sort"
	"strings"

	cgroupsv3 "github.com/containerd/cgroups/v3"
)

// Membership is where one process sits in every cgroup hierarchy, as
// /proc/PID/cgroup shows it to the host: a v1 controller's group by
// controller name (name=systemd included), and the unified group.
type Membership struct {
	V1      map[string]string
	Unified string
}

// MembershipOf reads the groups of process pid.
func MembershipOf(pid int) (Membership, error) {
	v1, unified, err := cgroupsv3.ParseCgroupFileUnified(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return Membership{}, fmt.Errorf("cgroups: pid %d: %w", pid, err)
	}
	return Membership{V1: v1, Unified: unified}, nil
}

// Within fails unless m sits, in every hierarchy, in the group of parent
// or below it. A process in a sibling or an ancestor is outside the
// limits and the `kill --all` of parent's container, whatever its name
// shares with parent's group.
func (m Membership) Within(parent Membership) error {
	var out []string
	if !below(m.Unified, parent.Unified) {
		out = append(out, fmt.Sprintf("unified %s, not in %s", m.Unified, parent.Unified))
	}
	names := map[string]bool{}
	for n := range m.V1 {
		names[n] = true
	}
	for n := range parent.V1 {
		names[n] = true
	}
	for n := range names {
		got, ok := m.V1[n]
		want, wantOK := parent.V1[n]
		if ok != wantOK || !below(got, want) {
			out = append(out, fmt.Sprintf("%s %s, not in %s", n, got, want))
		}
	}
	if len(out) > 0 {
		sort.Strings(out)
		return fmt.Errorf("cgroups: %s", strings.Join(out, "; "))
	}
	return nil
}

// below tells whether group p is group parent or one of its descendants,
// by path element: /bhx-host is not below /bhx.
func below(p, parent string) bool {
	if p == parent {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(parent, "/")+"/")
}
