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
