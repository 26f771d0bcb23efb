package specs

import rspec "github.com/opencontainers/runtime-spec/specs-go"

func ruleNoNewPrivileges(c *Context, s *rspec.Spec) []Decision {
	return forbidNewPrivileges(ensureProcess(s))
}

// forbidNewPrivileges sets no_new_privs so that setuid binaries and file
// capabilities in the image cannot give back what the capability drop took.
func forbidNewPrivileges(p *rspec.Process) []Decision {
	d := Decision{Rule: "no_new_privileges", Field: "process.noNewPrivileges", Action: Kept,
		Before: "true", After: "true", Layer: LayerNoNewPrivs,
		Why: "setuid bits and file capabilities are ignored on execve"}
	if !p.NoNewPrivileges {
		d.Action, d.Before = Tightened, "false"
		p.NoNewPrivileges = true
	}
	return []Decision{d}
}
