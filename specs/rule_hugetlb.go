package specs

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// hugepagesDir lists the huge page sizes the host's kernel has, one
// hugepages-<n>kB directory each.
const hugepagesDir = "/sys/kernel/mm/hugepages"

func ruleHugetlb(_ *Context, s *rspec.Spec) []Decision {
	if s.Linux == nil || s.Linux.Resources == nil {
		return nil
	}
	return checkHugepageLimits(s.Linux.Resources)
}

// checkHugepageLimits refuses a hugetlb limit whose page size is not one
// the host's kernel has, spelled as its cgroup files spell it (2MB, 1GB).
// Both backends make a file name of it (hugetlb.<pageSize>.limit_in_bytes)
// and write the limit there as root, runsc with a plain path join, so a
// size of "../../x" names another file of the host's cgroups. A limit
// itself only restricts.
func checkHugepageLimits(r *rspec.LinuxResources) []Decision {
	if len(r.HugepageLimits) == 0 {
		return nil
	}
	sizes := hostHugepageSizes()
	var ds []Decision
	for _, l := range r.HugepageLimits {
		d := Decision{Rule: "hugetlb", Field: "linux.resources.hugepageLimits[].pageSize", Action: Kept,
			Before: shown(l.Pagesize), After: l.Pagesize, Layer: LayerNone, Why: "a page size of the host's kernel"}
		if !sizes[l.Pagesize] {
			d.Action, d.After = Refused, ""
			d.Why = fmt.Sprintf("not a huge page size of this host's kernel (%s), spelled as its cgroup files are; the backend makes a file name of it", strings.Join(slices.Sorted(maps.Keys(sizes)), ", "))
		}
		ds = append(ds, d)
	}
	return ds
}

// hostHugepageSizes are the huge page sizes of the host's kernel, named
// as the hugetlb cgroup names them (runc's HugePageSizes): 2048kB is
// 2MB, 1048576kB 1GB.
func hostHugepageSizes() map[string]bool {
	sizes := map[string]bool{}
	entries, _ := os.ReadDir(hugepagesDir)
	for _, e := range entries {
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(e.Name(), "hugepages-"), "kB"), 10, 64)
		if err != nil || kb == 0 {
			continue
		}
		switch {
		case kb%(1<<20) == 0:
			sizes[fmt.Sprintf("%dGB", kb>>20)] = true
		case kb%(1<<10) == 0:
			sizes[fmt.Sprintf("%dMB", kb>>10)] = true
		default:
			sizes[fmt.Sprintf("%dKB", kb)] = true
		}
	}
	return sizes
}
