package runtime

import (
	"os"
	"slices"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/specs"
)

// TestBuiltinJobProfiles: the job profiles load from the built-in
// configuration with the properties the README's capability map gives
// them, and a job can select each with the profile annotation.
func TestBuiltinJobProfiles(t *testing.T) {
	cfg := selectConfig(t)
	want := map[string]struct {
		lifetime, workspaceSize string
	}{
		"formatter": {"10m", "128m"},
		"tests":     {"30m", "128m"},
		"install":   {"15m", "512m"},
	}
	if len(want) != len(JobProfiles) {
		t.Fatalf("JobProfiles %v, want the %d documented here", JobProfiles, len(want))
	}
	for _, name := range JobProfiles {
		t.Run(name, func(t *testing.T) {
			p, ok := cfg.Profiles[name]
			if !ok {
				t.Fatalf("no built-in profile %s", name)
			}
			w := want[name]
			if !p.Selectable || p.Trusted || p.Mode != specs.Enforce || p.Backend != "runc" {
				t.Errorf("selectable %v, trusted %v, mode %s, backend %s: want a selectable, untrusted, enforcing runc profile", p.Selectable, p.Trusted, p.Mode, p.Backend)
			}
			if p.WorkspaceMode != "overlay" || !slices.Contains(p.Workspaces, "/workspace") || p.WorkspaceSize != w.workspaceSize {
				t.Errorf("workspace %v mode %q size %s: want a copy-on-write /workspace of %s", p.Workspaces, p.WorkspaceMode, p.WorkspaceSize, w.workspaceSize)
			}
			if p.Network != specs.NetworkNone || len(p.Egress) != 0 {
				t.Errorf("network %q egress %v: want none, and no egress until the operator lists some", p.Network, p.Egress)
			}
			if p.MaxLifetime != w.lifetime {
				t.Errorf("max_lifetime %q, want %q", p.MaxLifetime, w.lifetime)
			}
			sel, err := Select(cfg, &Globals{}, map[string]string{AnnotationProfile: name})
			if err != nil || sel.Profile.Name != name || sel.Backend.Name != "runc" {
				t.Fatalf("annotation %s=%s: %v, %v; want profile %s on runc", AnnotationProfile, name, sel, err, name)
			}
			if _, err := Select(cfg, &Globals{}, map[string]string{AnnotationProfile: name, AnnotationBackend: "runsc"}); err != nil {
				t.Errorf("annotation %s=%s with runsc: %v", AnnotationProfile, name, err)
			}
		})
	}
}

// TestInstallProfileWithRegistries: an operator's egress list for the
// install profile keeps it selectable and puts the broker in what a job
// may do.
func TestInstallProfileWithRegistries(t *testing.T) {
	cfg, err := decodeConfig(selectConfig(t), []byte(`
[profiles.install]
egress = ["registry.npmjs.org:443", "pypi.org:443", "files.pythonhosted.org:443"]
`), "operator")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Profiles["install"]
	if !p.Selectable || len(p.Egress) != 3 || p.MaxLifetime != "15m" {
		t.Fatalf("install after the operator's list: selectable %v, egress %v, lifetime %s", p.Selectable, p.Egress, p.MaxLifetime)
	}
	if sel, err := Select(cfg, &Globals{}, map[string]string{AnnotationProfile: "install"}); err != nil || len(sel.Profile.Egress) != 3 {
		t.Fatalf("select install: %v, %v", sel, err)
	}
	var network string
	for _, a := range Allowances(&p, false) {
		if a.What == "network" {
			network = a.May + " | " + a.Fails
		}
	}
	for _, w := range []string{"egress broker", "registry.npmjs.org:443, pypi.org:443, files.pythonhosted.org:443", "403 from the broker", "ENETUNREACH"} {
		if !strings.Contains(network, w) {
			t.Errorf("network allowance %q does not say %q", network, w)
		}
	}
	m, err := CapabilityMapMarkdown(cfg, []string{"install"})
	if err != nil || !strings.Contains(m, "| install | copy-on-write, 512m, what the job writes may run | egress broker to registry.npmjs.org:443") {
		t.Errorf("capability map of install with registries: %v\n%s", err, m)
	}
}

// TestREADMEHasTheCapabilityMap: the README's capability map is the one
// the built-in profiles render.
func TestREADMEHasTheCapabilityMap(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig("", false)
	if err != nil {
		t.Fatal(err)
	}
	m, err := CapabilityMapMarkdown(cfg, append([]string{"default"}, JobProfiles...))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), m) {
		t.Errorf("README.md lacks the capability map; it should read:\n%s", m)
	}
}
