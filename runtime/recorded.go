package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// recorded is a container bulkhead created, with what later verbs police it
// by: the profile it was created under and the backend that owns it.
type recorded struct {
	cfg     *Config
	backend *backend.Backend
	rec     *state.Record
	profile specs.Profile
	reg     *state.Registry
}

// lookupRecorded finds a container's record, profile and backend. The
// error wraps os.ErrNotExist when bulkhead has no record of the id.
func lookupRecorded(g *Globals, verb, id string) (*recorded, error) {
	if err := state.CheckID(id); err != nil {
		return nil, err
	}
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, err
	}
	// One read of the record: it names the backend and the profile.
	reg, err := state.OpenRegistry(g.Root)
	if err != nil {
		return nil, err
	}
	rec, err := reg.Get(id)
	if errors.Is(err, os.ErrNotExist) {
		// The runtime entry's selection must hold for the backend's own
		// verb, as owner requires.
		if _, serr := Select(cfg, g, nil); serr != nil {
			return nil, serr
		}
		return nil, fmt.Errorf("%s %s: %w", verb, id, errNoContainer)
	}
	if err != nil {
		return nil, err
	}
	if !rec.Verified() {
		return nil, fmt.Errorf("%s %s: %w", verb, id, unverified{id})
	}
	b, err := cfg.ResolveBackend(rec.Backend)
	if err != nil {
		return nil, err
	}
	profile, ok := cfg.Profiles[rec.Profile]
	if !ok {
		return nil, fmt.Errorf("%s %s: profile %q of the container is no longer configured", verb, id, rec.Profile)
	}
	return &recorded{cfg: cfg, backend: b, rec: rec, profile: profile, reg: reg}, nil
}

// handedBundle is the bundle the backend was given: bulkhead's own in
// enforce mode (the caller's config.json is never rewritten, so only this
// one holds the spec as handed over), the caller's in audit mode.
func (r *recorded) handedBundle() string {
	if r.rec.Mode == specs.Enforce {
		return filepath.Join(r.reg.Dir(r.rec.ID), privateBundleDir)
	}
	return r.rec.Bundle
}

// errNoContainer is an id bulkhead has no record of, in runc's words for
// it; the record's path is bulkhead's business. It is os.ErrNotExist.
var errNoContainer error = noContainer{}

type noContainer struct{}

func (noContainer) Error() string { return "container does not exist" }
func (noContainer) Unwrap() error { return os.ErrNotExist }

// unverified is a record whose create never finished: nothing of the
// container was verified. Its message says what to do.
type unverified struct{ id string }

func (u unverified) Error() string {
	return fmt.Sprintf("its create did not finish (it was interrupted, or is still running), so nothing of the container was verified; delete it (bulkhead delete --force %s) and create it again", u.id)
}
