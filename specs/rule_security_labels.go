package specs

import (
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// containerSELinuxTypes are the SELinux types of confined containers.
var containerSELinuxTypes = []string{"container_t", "container_init_t", "svirt_lxc_net_t", "svirt_sandbox_file_t", "container_file_t"}

func ruleSecurityLabels(c *Context, s *rspec.Spec) []Decision {
	ds := checkLabels(c.Profile, ensureProcess(s))
	if l := s.Linux; l != nil && l.MountLabel != "" && !containerLabel(l.MountLabel) {
		ds = append(ds, Decision{Rule: "security_labels", Field: "linux.mountLabel", Action: Refused,
			Before: l.MountLabel, Layer: LayerNone,
			Why: "only a container SELinux type (" + strings.Join(containerSELinuxTypes, ", ") + ") may label the container's files"})
	}
	return ds
}

// checkLabels keeps the engine's AppArmor profile and SELinux label only
// when they confine: an engine's profile may not be swapped for
// "unconfined" or a privileged type.
func checkLabels(prof *Profile, p *rspec.Process) []Decision {
	var ds []Decision
	if a := p.ApparmorProfile; a != "" {
		d := Decision{Rule: "security_labels", Field: "process.apparmorProfile", Action: Kept, Before: a, After: a,
			Layer: LayerNone, Why: "a confining AppArmor profile on the profile's apparmor_profiles"}
		if !hasOpt(prof.AppArmorProfiles, a) {
			d.Action, d.After = Refused, ""
			d.Why = "AppArmor profile " + a + " is not on the profile's apparmor_profiles; remove it or an administrator adds it"
		}
		ds = append(ds, d)
	}
	if l := p.SelinuxLabel; l != "" && !containerLabel(l) {
		ds = append(ds, Decision{Rule: "security_labels", Field: "process.selinuxLabel", Action: Refused, Before: l,
			Layer: LayerNone, Why: "only a container SELinux type (" + strings.Join(containerSELinuxTypes, ", ") + ") confines the job"})
	}
	return ds
}

// containerLabel: user:role:type[:level] with a container type.
func containerLabel(label string) bool {
	parts := strings.SplitN(label, ":", 4)
	return len(parts) >= 3 && hasOpt(containerSELinuxTypes, parts[2])
}
