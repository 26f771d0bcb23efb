package specs

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// The ceilings of the block I/O weights are the largest values that land
// at or below the default weight of a group nobody weighted, on every
// file runc writes them to, so a container never gets a larger share of
// a busy disk than the host's other groups:
//
//   - weight goes to blkio.weight (cgroup v1 CFQ, default 500),
//     blkio.bfq.weight or io.bfq.weight (BFQ, default 100) as it is, and
//     on cgroup v2 without BFQ to io.weight (default 100) through runc's
//     conversion 1 + (w-10)*9999/990, which makes the v1 default 500 into
//     4950 and 100 into 910. 19 becomes io.weight 91 (20 would be 102), and
//     is below the default everywhere else.
//   - leafWeight and weightDevice[] weights are written as they are
//     (blkio.leaf_weight*, blkio.weight_device, BFQ's per-device weight),
//     never converted: 100 is BFQ's default and below CFQ's.
//
// Weights are proportional shares: they only order groups when the disk
// is contended, and 0 leaves runc's write out (the host's default).
const (
	maxBlkioWeight     = 19
	maxBlkioLeafWeight = 100
)

func ruleBlkio(_ *Context, s *rspec.Spec) []Decision {
	if s.Linux == nil || s.Linux.Resources == nil {
		return nil
	}
	return clampBlockIO(s.Linux.Resources)
}

// clampBlockIO lowers every block I/O weight above its ceiling to the
// ceiling; a lower weight, the caller's stricter choice, is kept.
func clampBlockIO(r *rspec.LinuxResources) []Decision {
	b := r.BlockIO
	if b == nil {
		return nil
	}
	var ds []Decision
	clamp := func(field string, w *uint16, ceiling uint16) {
		if w == nil || *w <= ceiling {
			return
		}
		ds = append(ds, Decision{Rule: "blkio", Field: field, Action: Tightened, Before: fmt.Sprint(*w), After: fmt.Sprint(ceiling),
			Layer: LayerIO, Why: fmt.Sprintf("a weight above %d gives the container a larger share of a busy disk than the host's own groups", ceiling)})
		*w = ceiling
	}
	clamp("linux.resources.blockIO.weight", b.Weight, maxBlkioWeight)
	clamp("linux.resources.blockIO.leafWeight", b.LeafWeight, maxBlkioLeafWeight)
	for i := range b.WeightDevice {
		d := &b.WeightDevice[i]
		field := fmt.Sprintf("linux.resources.blockIO.weightDevice[%d:%d]", d.Major, d.Minor)
		clamp(field+".weight", d.Weight, maxBlkioLeafWeight)
		clamp(field+".leafWeight", d.LeafWeight, maxBlkioLeafWeight)
	}
	return ds
}
