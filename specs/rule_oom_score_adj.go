package specs

import (
	"strconv"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// minOOMScoreAdj makes the kernel's OOM killer pick sandboxes before the
// host's services when the host itself runs out of memory.
const minOOMScoreAdj = 500

func ruleOOMScoreAdj(c *Context, s *rspec.Spec) []Decision {
	return raiseOOMScoreAdj(ensureProcess(s))
}

func raiseOOMScoreAdj(p *rspec.Process) []Decision {
	d := Decision{Rule: "oom_score_adj", Field: "process.oomScoreAdj", Action: Kept,
		After: strconv.Itoa(minOOMScoreAdj), Layer: LayerNone,
		Why: "sandboxes die first when the host runs out of memory"}
	switch {
	case p.OOMScoreAdj == nil:
		d.Action, d.Before = Added, "unset"
		p.OOMScoreAdj = intp(minOOMScoreAdj)
	case *p.OOMScoreAdj < minOOMScoreAdj:
		d.Action, d.Before = Tightened, strconv.Itoa(*p.OOMScoreAdj)
		p.OOMScoreAdj = intp(minOOMScoreAdj)
	default:
		d.Before, d.After = strconv.Itoa(*p.OOMScoreAdj), strconv.Itoa(*p.OOMScoreAdj)
	}
	return []Decision{d}
}
