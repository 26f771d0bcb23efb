package runtime

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/specs"
)

// Annotations a job may use to ask for a profile or backend. A profile is
// honoured only when the runtime entry named none (the configuration's
// default applies) and the administrator marked it selectable: a
// selectable job profile grants more than the default (an executable
// scratch, more memory, a longer lifetime), so it is a grant to the jobs of
// the default entry, never a way out of a profile an entry chose with
// --profile. A backend is honoured only towards stronger isolation.
const (
	AnnotationProfile = "bulkhead.dev/profile"
	AnnotationBackend = "bulkhead.dev/backend"
)

// isolation ranks backends by kind: a job may move up this ladder, never
// down. Names are the administrator's ([backends.gvisor] path = "runsc"),
// so a backend is ranked by what it runs, never by what it is called.
var isolation = map[string]int{"runc": 1, "crun": 1, "runsc": 2}

// isolationOf ranks the configured backend name.
func isolationOf(cfg *Config, name string) int {
	bc := cfg.Backends[name]
	return isolation[(&backend.Backend{Name: name, Path: bc.Path, Declared: bc.Kind}).Kind()]
}

// Selection is the profile and backend chosen for one container.
type Selection struct {
	Profile specs.Profile
	Backend *backend.Backend
}

// Select decides profile and backend from, in order: the runtime entry
// (--profile/--backend flags or the argv0 symlink), the configuration's
// default, then the job's annotations within what the administrator
// allows.
func Select(cfg *Config, g *Globals, annotations map[string]string) (*Selection, error) {
	profileName := g.Profile
	if profileName == "" {
		profileName = cfg.DefaultProfile
	}
	profile, ok := cfg.Profiles[profileName]
	if !ok {
		return nil, fmt.Errorf("unknown profile %q: configured profiles are %s", profileName, strings.Join(slices.Sorted(maps.Keys(cfg.Profiles)), ", "))
	}
	backendName := profile.Backend
	if b := defaultBackendForArgv0(g.Argv0); b != "" {
		backendName = b
	}
	if g.Backend != "" {
		backendName = g.Backend
	}
	if _, ok := cfg.Backends[backendName]; !ok {
		_, err := cfg.ResolveBackend(backendName)
		return nil, err
	}

	if want, ok := annotations[AnnotationProfile]; ok && want != profileName {
		p, ok := cfg.Profiles[want]
		if !ok {
			return nil, fmt.Errorf("annotation %s=%q: unknown profile: configured profiles are %s", AnnotationProfile, want, strings.Join(slices.Sorted(maps.Keys(cfg.Profiles)), ", "))
		}
		if !p.Selectable {
			return nil, fmt.Errorf("annotation %s=%q: profile is not selectable; an administrator can set selectable = true in [profiles.%s]", AnnotationProfile, want, want)
		}
		if g.Profile != "" {
			return nil, fmt.Errorf("annotation %s=%q: this runtime entry runs profile %s (--profile %s); a job cannot replace it, use a runtime entry without --profile", AnnotationProfile, want, profileName, g.Profile)
		}
		// The profile's limits, on the stronger of its backend and the
		// entry's: a job profile picked on the gVisor entry stays on gVisor.
		profile = p
		if _, ok := cfg.Backends[p.Backend]; !ok {
			return nil, fmt.Errorf("annotation %s=%q: its backend %q is not configured", AnnotationProfile, want, p.Backend)
		}
		if isolationOf(cfg, p.Backend) >= isolationOf(cfg, backendName) {
			backendName = p.Backend
		}
	}
	if want, ok := annotations[AnnotationBackend]; ok && want != backendName {
		if _, ok := cfg.Backends[want]; !ok {
			return nil, fmt.Errorf("annotation %s=%q: unknown backend", AnnotationBackend, want)
		}
		// A weaker backend is never granted, so no setting is offered for it.
		if isolationOf(cfg, want) <= isolationOf(cfg, backendName) {
			return nil, fmt.Errorf("annotation %s=%q: refused, only a stronger isolation than %s may be requested", AnnotationBackend, want, backendName)
		}
		if !profile.Selectable {
			return nil, fmt.Errorf("annotation %s=%q: profile %s is not selectable, so its backend is fixed; an administrator can set selectable = true in [profiles.%s]", AnnotationBackend, want, profile.Name, profile.Name)
		}
		backendName = want
	}
	b, err := cfg.ResolveBackend(backendName)
	if err != nil {
		return nil, err
	}
	return &Selection{Profile: profile, Backend: b}, nil
}
