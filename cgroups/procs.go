package cgroups

import (
	"fmt"
	"slices"
)

// Procs lists the processes in the group and every group below it: on v1
// in each of the pids, memory and cpu hierarchies the group has, since a
// process moved out of one hierarchy's group escapes that one only.
func (g *Group) Procs() ([]int, error) {
	var pids []int
	if g.version == 2 {
		procs, err := g.v2.Procs(true)
		if err != nil {
			return nil, fmt.Errorf("cgroups: %s: %w", g.path, err)
		}
		for _, p := range procs {
			pids = append(pids, int(p))
		}
	} else {
		for _, n := range v1Controllers {
			if _, ok := g.v1dirs[n]; !ok {
				continue
			}
			procs, err := g.v1.Processes(n, true)
			if err != nil {
				return nil, fmt.Errorf("cgroups: %s: %s: %w", g.path, n, err)
			}
			for _, p := range procs {
				pids = append(pids, p.Pid)
			}
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}
