package runtime

import (
	"fmt"

	"bulkhead.dev/bulkhead/specs"
)

// probeEgressDenied is the destination the probe asks the broker for and
// must be refused: a name under .invalid, which no registry has (RFC
// 6761), so no egress list names it by accident.
const probeEgressDenied = "denied.bulkhead.invalid:80"

// probeEgressArgs are the probe's flags for the egress control. A profile
// with egress (enforced: audit mode starts no broker) gets a destination
// its list names, which must answer through the broker, one it does not,
// and an address to try around the broker; without egress, no flags, and
// the probe expects no broker at all. target, when set, is the listed
// destination to try (a wildcard entry names no host to try by itself);
// else the first entry that names one host.
func probeEgressArgs(prof *specs.Profile, target string) ([]string, error) {
	if len(prof.Egress) == 0 || prof.Mode != specs.Enforce {
		if target != "" {
			return nil, fmt.Errorf("probe --egress-target %s: profile %s has no egress broker", target, prof.Name)
		}
		return nil, nil
	}
	entries, err := specs.ParseEgress(prof.Egress)
	if err != nil {
		return nil, err
	}
	if target != "" {
		if !listed(entries, target) {
			return nil, fmt.Errorf("probe --egress-target %s: not in profile %s's egress list %v", target, prof.Name, prof.Egress)
		}
	} else {
		for _, e := range entries {
			if !e.Wildcard {
				target = e.String()
				break
			}
		}
		if target == "" {
			return nil, fmt.Errorf("probe: profile %s lists only wildcards %v: name one destination to try with --egress-target", prof.Name, prof.Egress)
		}
	}
	if listed(entries, probeEgressDenied) {
		return nil, fmt.Errorf("probe: profile %s lists %s, the destination the probe expects to be refused", prof.Name, probeEgressDenied)
	}
	args := []string{"-egress-allow", target, "-egress-deny", probeEgressDenied}
	// A listed address is the strongest direct attempt: the broker may
	// reach it, the job must not. Loopback would be the namespace's own.
	for _, e := range entries {
		if e.Addr.IsValid() && !e.Addr.IsLoopback() && !e.Addr.IsUnspecified() {
			args = append(args, "-egress-direct", e.String())
			break
		}
	}
	return args, nil
}

// listed tells whether hostport is a destination the entries allow.
func listed(entries []specs.EgressEntry, hostport string) bool {
	e, err := specs.ParseEgress([]string{hostport})
	if err != nil || e[0].Wildcard {
		return false
	}
	d := e[0]
	for _, x := range entries {
		if (d.Addr.IsValid() && x.MatchAddr(d.Addr, d.Port)) || (!d.Addr.IsValid() && x.MatchName(d.Host, d.Port)) {
			return true
		}
	}
	return false
}
