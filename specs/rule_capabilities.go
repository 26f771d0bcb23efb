package specs

import rspec "github.com/opencontainers/runtime-spec/specs-go"

func ruleCapabilities(c *Context, s *rspec.Spec) []Decision {
	return dropCapabilities(ensureProcess(s))
}

// dropCapabilities empties all five sets. The object must stay non-nil:
// runc leaves the capabilities of a process alone when it is absent, which
// for uid 0 means all of them.
func dropCapabilities(p *rspec.Process) []Decision {
	const why = "every capability check fails (EPERM); the sandbox needs none of them"
	if p.Capabilities == nil {
		p.Capabilities = emptyCapabilities()
		return []Decision{{Rule: "capabilities", Field: "process.capabilities", Action: Added,
			Before: "absent (runc would keep every capability)", After: "all sets empty",
			Layer: LayerCapabilities, Why: why}}
	}
	old := p.Capabilities
	sets := []struct {
		name string
		v    []string
	}{
		{"bounding", old.Bounding}, {"effective", old.Effective}, {"inheritable", old.Inheritable},
		{"permitted", old.Permitted}, {"ambient", old.Ambient},
	}
	var ds []Decision
	for _, set := range sets {
		d := Decision{Rule: "capabilities", Field: "process.capabilities." + set.name,
			Action: Kept, Before: fmtList(set.v), After: "none", Layer: LayerCapabilities, Why: why}
		if len(set.v) > 0 {
			d.Action = Tightened
		}
		ds = append(ds, d)
	}
	p.Capabilities = emptyCapabilities()
	return ds
}

func emptyCapabilities() *rspec.LinuxCapabilities {
	return &rspec.LinuxCapabilities{Bounding: []string{}, Effective: []string{},
		Inheritable: []string{}, Permitted: []string{}, Ambient: []string{}}
}
