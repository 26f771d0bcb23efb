package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// selectConfig: backends that resolve on any machine, the built-in
// profiles, and a selectable runc profile.
func selectConfig(t *testing.T) *Config {
	t.Helper()
	return configOver(t, `
default_profile = "default"
[backends.runc]
path = "/bin/true"
[backends.runsc]
path = "/bin/true"
[profiles.default]
backend = "runc"
[profiles.gvisor]
backend = "runsc"
selectable = true
[profiles.open]
backend = "runc"
selectable = true
`)
}

// configOver is the built-in configuration with doc over it.
func configOver(t *testing.T, doc string) *Config {
	t.Helper()
	base, err := decodeConfig(nil, builtinConfig, "built-in")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := decodeConfig(base, []byte(doc), "test")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestSelect(t *testing.T) {
	cfg := selectConfig(t)
	cases := []struct {
		name                  string
		g                     Globals
		annotations           map[string]string
		profile, backend, err string
	}{
		{"defaults", Globals{Argv0: "bulkhead"}, nil, "default", "runc", ""},
		{"argv0 bulkhead-runsc", Globals{Argv0: "/usr/local/bin/bulkhead-runsc"}, nil, "default", "runsc", ""},
		{"--backend", Globals{Backend: "runsc"}, nil, "default", "runsc", ""},
		{"--profile", Globals{Profile: "gvisor"}, nil, "gvisor", "runsc", ""},
		{"unknown --profile", Globals{Profile: "nope"}, nil, "", "", `unknown profile "nope"`},
		{"unknown --backend", Globals{Backend: "nope"}, nil, "", "", `unknown backend "nope"`},
		{"annotation to a selectable profile", Globals{}, map[string]string{AnnotationProfile: "gvisor"}, "gvisor", "runsc", ""},
		{"annotation to a profile not selectable", Globals{Profile: "open"}, map[string]string{AnnotationProfile: "default"}, "", "", "not selectable"},
		{"annotation to a runc profile on the gVisor entry", Globals{Argv0: "bulkhead-runsc"}, map[string]string{AnnotationProfile: "open"}, "open", "runsc", ""},
		{"annotation to a runc profile with --backend runsc", Globals{Backend: "runsc"}, map[string]string{AnnotationProfile: "open"}, "open", "runsc", ""},
		{"annotation to a runc profile, backend annotation too", Globals{Argv0: "bulkhead-runsc"}, map[string]string{AnnotationProfile: "open", AnnotationBackend: "runsc"}, "open", "runsc", ""},
		{"annotation to a runc profile from an entry's --profile", Globals{Profile: "gvisor"}, map[string]string{AnnotationProfile: "open"}, "", "", "cannot replace it"},
		{"annotation out of the entry's --profile", Globals{Profile: "open"}, map[string]string{AnnotationProfile: "gvisor"}, "", "", "cannot replace it"},
		{"annotation naming the entry's --profile", Globals{Profile: "gvisor"}, map[string]string{AnnotationProfile: "gvisor"}, "gvisor", "runsc", ""},
		{"annotation to an unknown profile", Globals{}, map[string]string{AnnotationProfile: "nope"}, "", "", "unknown profile"},
		{"backend annotation, selectable profile", Globals{Profile: "open"}, map[string]string{AnnotationBackend: "runsc"}, "open", "runsc", ""},
		{"backend annotation, fixed profile", Globals{}, map[string]string{AnnotationBackend: "runsc"}, "", "", "not selectable"},
		{"backend annotation towards weaker", Globals{Profile: "gvisor"}, map[string]string{AnnotationBackend: "runc"}, "", "", "only a stronger isolation"},
		// No setting would grant it, so the refusal offers none.
		{"backend annotation towards weaker, fixed profile", Globals{Argv0: "bulkhead-runsc"}, map[string]string{AnnotationBackend: "runc"}, "", "", "only a stronger isolation"},
		{"backend annotation unknown", Globals{Profile: "open"}, map[string]string{AnnotationBackend: "nope"}, "", "", "unknown backend"},
		{"annotation naming what is chosen anyway", Globals{}, map[string]string{AnnotationBackend: "runc", AnnotationProfile: "default"}, "default", "runc", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sel := selected(t, cfg, c.g, c.annotations, c.err)
			if sel != nil && (sel.Profile.Name != c.profile || sel.Backend.Name != c.backend) {
				t.Fatalf("selected %s on %s, want %s on %s", sel.Profile.Name, sel.Backend.Name, c.profile, c.backend)
			}
		})
	}
}

// TestSelectRanksBackendsByKind: the ladder ranks what a backend runs,
// not its name. An administrator's [backends.gvisor] running runsc is
// gVisor: a job on it may not move to runc, by a profile or a backend
// annotation.
func TestSelectRanksBackendsByKind(t *testing.T) {
	runsc := filepath.Join(t.TempDir(), "runsc")
	if err := os.WriteFile(runsc, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := configOver(t, `
default_profile = "default"
[backends.runc]
path = "/bin/true"
[backends.gvisor]
path = "`+runsc+`"
[profiles.default]
backend = "gvisor"
selectable = true
[profiles.open]
backend = "runc"
selectable = true
`)
	for _, c := range []struct {
		name        string
		g           Globals
		annotations map[string]string
		want, err   string
	}{
		{"a runc profile on the gVisor default", Globals{}, map[string]string{AnnotationProfile: "open"}, "gvisor", ""},
		{"a runc profile through --backend gvisor", Globals{Backend: "gvisor"}, map[string]string{AnnotationProfile: "open"}, "gvisor", ""},
		{"runc asked for on the gVisor default", Globals{}, map[string]string{AnnotationBackend: "runc"}, "", "only a stronger isolation"},
		{"gVisor asked for from runc", Globals{Profile: "open"}, map[string]string{AnnotationBackend: "gvisor"}, "gvisor", ""},
		{"an entry's unknown backend", Globals{Backend: "nope"}, map[string]string{AnnotationProfile: "open"}, "", `unknown backend "nope"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			sel := selected(t, cfg, c.g, c.annotations, c.err)
			if sel != nil && (sel.Backend.Name != c.want || !sel.Backend.IsGVisor()) {
				t.Fatalf("selected %s (%s), want %s", sel.Backend.Name, sel.Backend.Kind(), c.want)
			}
		})
	}
}

// selected is Select's choice, or nil once the error containing wantErr
// (when not "") was returned.
func selected(t *testing.T, cfg *Config, g Globals, annotations map[string]string, wantErr string) *Selection {
	t.Helper()
	sel, err := Select(cfg, &g, annotations)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err %v, want one containing %q", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// TestBackendKindIsNeverGuessed: a backend whose name and binary do not
// say which runtime it runs must declare it; taken for runc, a gVisor
// binary named runsc-20221219 let a job's profile annotation move it off
// gVisor. A declared kind that contradicts the name or binary is refused.
func TestBackendKindIsNeverGuessed(t *testing.T) {
	runsc := filepath.Join(t.TempDir(), "runsc-20221219")
	if err := os.WriteFile(runsc, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := func(backends string) string {
		return "default_profile = \"default\"\n[backends.runc]\npath = \"/bin/true\"\n" + backends +
			"[profiles.default]\nbackend = \"gvisor\"\nselectable = true\n[profiles.open]\nbackend = \"runc\"\nselectable = true\n"
	}
	for _, c := range []struct{ name, backends, err string }{
		{"a binary that says nothing", "[backends.gvisor]\npath = \"" + runsc + "\"\n", "set kind"},
		{"a kind the binary contradicts", "[backends.gvisor]\npath = \"/usr/bin/runsc\"\nkind = \"runc\"\n", "binary says runsc"},
		{"a name and a binary that disagree", "[backends.runsc]\npath = \"/usr/sbin/runc\"\n[backends.gvisor]\npath = \"/usr/bin/runsc\"\n", "say runc and runsc"},
		{"an unknown kind", "[backends.gvisor]\npath = \"" + runsc + "\"\nkind = \"kata\"\n", "none of runc, runsc, crun"},
		{"a kind that settles a name against its binary", "[backends.runsc]\npath = \"/usr/sbin/runc\"\nkind = \"runc\"\n[backends.gvisor]\npath = \"/usr/bin/runsc\"\n", "say runc and runsc"},
		{"a relative path", "[backends.gvisor]\npath = \"./runsc\"\n", "give an absolute path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, err := decodeConfig(nil, builtinConfig, "built-in")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decodeConfig(base, []byte(doc(c.backends)), "test"); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err %v, want one containing %q", err, c.err)
			}
		})
	}
	cfg := configOver(t, doc("[backends.gvisor]\npath = \""+runsc+"\"\nkind = \"runsc\"\n"))
	selected(t, cfg, Globals{}, map[string]string{AnnotationBackend: "runc"}, "only a stronger isolation")
	if sel := selected(t, cfg, Globals{}, map[string]string{AnnotationProfile: "open"}, ""); sel.Backend.Name != "gvisor" || !sel.Backend.IsGVisor() {
		t.Fatalf("a runc profile on the declared gVisor default: %s (%s), want gvisor", sel.Backend.Name, sel.Backend.Kind())
	}
}
