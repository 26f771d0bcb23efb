package runtime

import (
	"fmt"
	"strings"

	"bulkhead.dev/bulkhead/specs"
)

// JobProfiles are the built-in profiles a job selects with the annotation
// bulkhead.dev/profile, in the order the README shows them.
var JobProfiles = []string{"formatter", "tests", "install"}

// CapabilityMapMarkdown renders the named profiles as the README's
// capability map: per profile, what the workspace, the network and the
// wall clock allow. It is drawn from the profiles themselves, so the
// README cannot promise what the configuration does not give.
func CapabilityMapMarkdown(cfg *Config, names []string) (string, error) {
	var b strings.Builder
	b.WriteString("| profile | workspace | network | lifetime |\n|---|---|---|---|\n")
	for _, n := range names {
		p, ok := cfg.Profiles[n]
		if !ok {
			return "", fmt.Errorf("capability map: unknown profile %q", n)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", n, workspaceCapability(&p), networkCapability(&p), lifetimeCapability(&p))
	}
	return b.String(), nil
}

func workspaceCapability(p *specs.Profile) string {
	switch p.WorkspaceMode {
	case "readonly":
		return "read-only"
	case "direct":
		return "the host checkout, written in place"
	}
	runs := "nothing written there runs"
	if p.ExecutesWrites() {
		runs = "what the job writes may run"
	}
	return fmt.Sprintf("copy-on-write, %s, %s", p.WorkspaceSize, runs)
}

func networkCapability(p *specs.Profile) string {
	switch {
	case p.Network == specs.NetworkCaller:
		return "the caller's network namespace"
	case len(p.Egress) > 0:
		return "egress broker to " + strings.Join(p.Egress, ", ")
	}
	return "none: loopback only (`egress = []`)"
}

func lifetimeCapability(p *specs.Profile) string {
	if p.MaxLifetime == "" || p.MaxLifetime == "0" {
		return "none"
	}
	return p.MaxLifetime
}
