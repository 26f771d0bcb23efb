package specs

import (
	"strconv"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// minOOMScoreAdj makes the kernel's OOM killer pick sandboxes before the
// host's services when the host itself runs out of memory.
const minOOMScoreAdj = 500

// maxOOMScoreAdj is the kernel's highest value (OOM_SCORE_ADJ_MAX): runc
// fails a higher one in create, runsc only in start, having run the
// sandbox at the host's default until then.
const maxOOMScoreAdj = 1000

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
	case *p.OOMScoreAdj > maxOOMScoreAdj:
		d.Action, d.Before, d.After = Refused, strconv.Itoa(*p.OOMScoreAdj), ""
		d.Why = "above 1000, the kernel's highest value: runc fails it in create, runsc only in start; set at most 1000"
	case *p.OOMScoreAdj < minOOMScoreAdj:
		d.Action, d.Before = Tightened, strconv.Itoa(*p.OOMScoreAdj)
		p.OOMScoreAdj = intp(minOOMScoreAdj)
	default:
		d.Before, d.After = strconv.Itoa(*p.OOMScoreAdj), strconv.Itoa(*p.OOMScoreAdj)
	}
	return []Decision{d}
}
