package specs

import (
	"fmt"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// containerSELinuxTypes are the SELinux types of confined containers.
var containerSELinuxTypes = []string{"container_t", "container_init_t", "svirt_lxc_net_t", "svirt_sandbox_file_t", "container_file_t"}

func ruleSecurityLabels(c *Context, s *rspec.Spec) []Decision {
	ds := checkLabels(c.Profile, ensureProcess(s))
	if l := s.Linux; l != nil && l.MountLabel != "" {
		if why := labelRefusal(l.MountLabel); why != "" {
			ds = append(ds, Decision{Rule: "security_labels", Field: "linux.mountLabel", Action: Refused,
				Before: l.MountLabel, Layer: LayerNone, Why: why + " may label the container's files"})
		}
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
	if l := p.SelinuxLabel; l != "" {
		if why := labelRefusal(l); why != "" {
			ds = append(ds, Decision{Rule: "security_labels", Field: "process.selinuxLabel", Action: Refused, Before: l,
				Layer: LayerNone, Why: why + " confines the job"})
		}
	}
	return ds
}

// maxLabelCategories is how many MCS categories a container's level may
// name: engines give each container two of its own (s0:c123,c456).
const maxLabelCategories = 2

// labelRefusal says why an SELinux label (user:role:type[:level]) does
// not confine a container, or "": its type must be a container type, and
// its level, where it has one, one sensitivity with one or two categories
// named one by one. A range (s0-s0:c0.c1023) dominates every container's
// categories, and a level without categories shares the files of every
// container without them: either undoes the separation MCS gives
// containers of the same type. The answer ends where the caller adds what
// the label is for.
func labelRefusal(label string) string {
	parts := strings.SplitN(label, ":", 4)
	if len(parts) < 3 || !hasOpt(containerSELinuxTypes, parts[2]) {
		return "only a container SELinux type (" + strings.Join(containerSELinuxTypes, ", ") + ")"
	}
	if len(parts) == 3 {
		return ""
	}
	sens, cats, ok := strings.Cut(parts[3], ":")
	if !ok || !mcsSensitivity(sens) || cats == "" {
		return "level " + parts[3] + " is not one sensitivity with categories of its own (s0:c123,c456); only a container level"
	}
	list := strings.Split(cats, ",")
	if len(list) > maxLabelCategories {
		return fmt.Sprintf("level %s names %d categories, more than a container's %d; only a container level", parts[3], len(list), maxLabelCategories)
	}
	for _, c := range list {
		if !mcsCategory(c) {
			return "level " + parts[3] + " has " + c + ", not one category (a range or a pattern dominates other containers'); only a container level"
		}
	}
	return ""
}

// mcsSensitivity tells whether s is one sensitivity (s0), not a range.
func mcsSensitivity(s string) bool { return len(s) > 1 && s[0] == 's' && allDigits(s[1:]) }

// mcsCategory tells whether c is one category (c123), not a range.
func mcsCategory(c string) bool { return len(c) > 1 && c[0] == 'c' && allDigits(c[1:]) }

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
