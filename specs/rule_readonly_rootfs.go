package specs

import rspec "github.com/opencontainers/runtime-spec/specs-go"

func ruleReadonlyRootfs(c *Context, s *rspec.Spec) []Decision {
	const rule, field = "readonly_rootfs", "root.readonly"
	if s.Root == nil {
		return []Decision{{Rule: rule, Field: "root", Action: Refused, Before: "absent", Layer: LayerNone,
			Why: "a spec without root.path names no filesystem to make read-only; the engine must set root"}}
	}
	if !c.Profile.ReadonlyRootfs {
		return []Decision{notEnforced(rule, field, boolStr(s.Root.Readonly))}
	}
	d := Decision{Rule: rule, Field: field, Action: Kept, Before: boolStr(s.Root.Readonly), After: "true",
		Layer: LayerReadOnly, Why: "the image cannot be modified (EROFS); scratch space is the /tmp tmpfs"}
	if !s.Root.Readonly {
		d.Action = Tightened
		s.Root.Readonly = true
	}
	return []Decision{d}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
