package runtime

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/workspace"
	"bulkhead.dev/bulkhead/specs"
)

// PlanInput is everything a plan is computed from. Nothing in it is
// written to: the registry is only read (pods a container may join, where
// its state directory would be).
type PlanInput struct {
	Config  *Config
	Globals *Globals
	// Bundle is the directory root.path and relative bind sources
	// resolve against.
	Bundle string
	// ID is the container's id; "" for a check that was given none, which
	// then plans for PlaceholderID.
	ID string
	// Spec is the caller's spec as decoded from Original; it is not
	// changed.
	Spec     *rspec.Spec
	Original []byte
	Registry *state.Registry
	// PidFile is the caller's --pid-file, absolute; "" for none.
	PidFile string
	// At reaches a path the spec names relative to the bundle: through
	// the bundle opened once at create (runtime/bundle_dir.go); nil joins
	// it to Bundle.
	At func(name string) string
}

// PlaceholderID is the id a check without --id plans for: the cgroups
// path and the state directory then show where create would put them.
const PlaceholderID = "ID"

// Plan is what create will do with one bundle, decided before anything
// happens: `create` carries it out and verifies it, `check` reports it.
// Every change between the caller's spec and Handed is one of Decisions.
type Plan struct {
	ID        string
	Selection *Selection
	// Ctx is what the rules knew; the pins judge the host paths with it
	// again at hand-over.
	Ctx *specs.Context
	// PodSandbox is the record of the pod sandbox whose namespaces the
	// rules let this container join, nil for none: verification holds
	// the joined namespaces to that process.
	PodSandbox *state.Record
	Decisions  []specs.Decision
	// Handed is the spec the backend gets: the rewritten one in enforce
	// mode, with host paths pinned, the caller's in audit mode.
	// HandedJSON is it as written into the bundle the backend reads.
	// RewrittenJSON is the rewritten spec before the pins, whose digest
	// the audit log records.
	Handed        *rspec.Spec
	HandedJSON    []byte
	RewrittenJSON []byte
	// Pins are the host paths the hand-over pins (runtime/pins.go).
	Pins []hostPin
	// ExecFilter is the BPF program every process of a runsc exec
	// installs on itself (plan_seccomp_exec.go); nil for other backends
	// and in audit mode.
	ExecFilter []byte
	// Lifetime is max_lifetime after the annotation; 0 for none.
	Lifetime time.Duration
	// Workspaces are the copy-on-write overlays to mount before the
	// hand-over; Handed already names their merged directories.
	Workspaces []workspace.Workspace
	// HandOverBundle is the bundle the backend gets: bulkhead's own in
	// the state directory in enforce mode (runtime/pins.go), the caller's
	// in audit mode. PidFile is where the backend writes the init's pid:
	// always bulkhead's own, in the state directory, which no one else
	// writes. CallerPidFile is the caller's --pid-file, which bulkhead
	// writes once the init is verified (runtime/caller_pid_file.go).
	HandOverBundle string
	PidFile        string
	CallerPidFile  string
	// EgressSocket is the broker's unix socket of a runsc container with
	// egress (egress_gvisor.go), in its state directory; "" otherwise.
	EgressSocket string

	globals *Globals

	// RuleErr is the rules' (and the lifetime's) refusal; PlanErr a
	// refusal found while planning the hand-over (bulkhead's own cgroup
	// busy, a workspace that cannot be overlaid); BackendErr the
	// backend's own validation; InvariantErr what the profile's
	// invariants still find in Handed.
	RuleErr, PlanErr, BackendErr, InvariantErr error
}

// Enforce is whether the plan hands over the policy's spec.
func (p *Plan) Enforce() bool { return p.Selection.Profile.Mode == specs.Enforce }

// MakePlan selects the profile and backend and plans the container: rules,
// lifetime, bulkhead's cgroups path, the translation for gVisor, the
// workspace overlays, the backend's validation and the invariants. It
// has no side effects. An error means no plan could be made (unknown
// profile, unreadable configuration); a refusal is in the plan.
func MakePlan(in PlanInput) (*Plan, error) {
	g, spec := in.Globals, in.Spec
	sel, err := Select(in.Config, g, spec.Annotations)
	if err != nil {
		return nil, err
	}
	p := &Plan{ID: in.ID, Selection: sel, globals: g}
	at := in.At
	if at == nil {
		at = func(name string) string {
			if filepath.IsAbs(name) {
				return name
			}
			return filepath.Join(in.Bundle, name)
		}
	}
	if p.ID == "" {
		p.ID = PlaceholderID
	}
	stateDir := in.Registry.Dir(p.ID)
	p.HandOverBundle, p.PidFile, p.CallerPidFile = in.Bundle, filepath.Join(stateDir, "init.pid"), in.PidFile
	if sel.Profile.Mode == specs.Enforce {
		p.HandOverBundle = filepath.Join(stateDir, privateBundleDir)
	}
	p.PodSandbox = in.Registry.PodSandbox(&sel.Profile, sel.Backend.Name, in.Bundle, spec.Annotations)
	p.Ctx = specContext(g, &sel.Profile, in.Bundle, p.PodSandbox, in.Original, in.ID)
	rewritten, decisions, err := specs.Apply(p.Ctx, spec)
	p.Lifetime, p.Decisions, p.RuleErr = withLifetime(&sel.Profile, spec.Annotations, decisions, err)
	p.Handed = spec
	gvisor := sel.Backend.IsGVisor()
	if p.Enforce() {
		if p.RuleErr != nil {
			return p, nil
		}
		p.Handed = rewritten
		p.decide(chooseCgroupsPath(p.Handed, g, p.ID)...)
		if p.PlanErr = freshCgroup(p.Ctx, p.Handed); p.PlanErr != nil {
			return p, nil
		}
		if gvisor && g.SystemdCgroup {
			if p.PlanErr = gvisorSystemdRefusal(); p.PlanErr != nil {
				return p, nil
			}
		}
		if gvisor {
			// Before the translation: the program installs the filter
			// as Linux reads it, not as runsc's converter needs it.
			if p.PlanErr = p.addSeccompExec(at); p.PlanErr != nil {
				return p, nil
			}
			if len(sel.Profile.Egress) > 0 && !joinsNetworkNamespace(p.Handed) {
				if p.PlanErr = p.addEgressForwarder(at, stateDir); p.PlanErr != nil {
					return p, nil
				}
			}
			p.decide(backend.TranslateForGVisor(p.Handed)...)
		}
	}
	p.BackendErr, p.InvariantErr = gateHanded(p.Ctx, p.ID, in.Bundle, p.Handed, g, gvisor)
	if p.InvariantErr != nil {
		p.InvariantErr = &invariantError{p.InvariantErr}
	}
	if p.Enforce() && (p.BackendErr != nil || p.InvariantErr != nil) {
		return p, nil
	}
	var more []specs.Decision
	p.Workspaces, more, p.PlanErr = workspace.Plan(&sel.Profile, p.Handed, at, stateDir)
	p.decide(more...)
	if p.PlanErr != nil {
		return p, nil
	}
	if p.RewrittenJSON, err = specs.MarshalHanded(p.Handed); err != nil {
		return nil, err
	}
	p.HandedJSON = p.RewrittenJSON
	if p.Enforce() {
		p.Pins, more = planPins(p.Handed, p.Workspaces, at, stateDir)
		p.decide(more...)
		if p.HandedJSON, err = specs.MarshalHanded(p.Handed); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// BackendArgv is the backend's command line for the hand-over (verb
// create or restore) with the caller's verb flags v, and the flags the
// backend does not know, which are not passed on.
func (p *Plan) BackendArgv(verb string, v Values) (argv, dropped []string) {
	b := p.Selection.Backend
	flags, dropped := ForwardFlags(verb, v, b.IsGVisor(), "bundle", "pid-file")
	args := append([]string{"--bundle", p.HandOverBundle, "--pid-file", p.PidFile}, flags...)
	argv = p.globals.backendArgv(b, verb, append(args, p.ID)...)
	return argv, dropped
}

// FlagRefusal is enforce mode's refusal of the caller's verb flags that
// loosen the boundary the handed spec sets, and of a restore the host
// cannot verify; nil when there are none or in audit mode, which promises
// the backend's own behaviour.
func (p *Plan) FlagRefusal(verb string, v Values) error {
	weak := WeakeningFlags(verb, v, p.Selection.Backend.IsGVisor())
	if w := p.globals.rootlessWeakens(); w != "" {
		weak = append(weak, w)
	}
	switch {
	case verb == "restore" && p.Selection.Backend.IsGVisor():
		// A gVisor image holds the sandbox's tasks, which the host cannot
		// see into.
		weak = append(weak, "restore on "+p.Selection.Backend.Name+": a gVisor checkpoint image carries its tasks' identity, "+
			"capabilities and seccomp filter, which the sandbox restores and the host cannot verify; create the container afresh")
	case verb == "restore":
		// CRIU rebuilds every process of the image as the image says:
		// beside an init that passes create's verification, a root
		// process with every capability, no seccomp filter and open
		// files, sockets or connections of its own. The spec rules none
		// of it, and what the image holds is the caller's.
		weak = append(weak, "restore on "+p.Selection.Backend.Name+": a CRIU image carries every process of the container with the identity, "+
			"capabilities, no_new_privs and seccomp filter it had, and its open files and sockets, which the spec does not rule and verification "+
			"of the init does not see; create the container afresh")
	}
	if !p.Enforce() || len(weak) == 0 {
		return nil
	}
	return fmt.Errorf("profile %s refuses %s", p.Selection.Profile.Name, strings.Join(weak, "; "))
}

func (p *Plan) decide(ds ...specs.Decision) { p.Decisions = append(p.Decisions, ds...) }

// Refusal is what stops create, in the order create meets it; nil when
// create hands the container over. Audit mode hands over whatever the
// rules, the backend's validation and the invariants said: it promises
// the backend's own behaviour, and bulkhead's copy of runc's validator may
// be newer than the installed runc.
func (p *Plan) Refusal() error {
	if !p.Enforce() {
		return p.PlanErr
	}
	for _, err := range []error{p.RuleErr, p.PlanErr, p.BackendErr, p.InvariantErr} {
		if err != nil {
			return err
		}
	}
	return nil
}

// Warnings are the backend's and the invariants' refusals that audit mode
// hands over anyway; the rules' are in the decisions.
func (p *Plan) Warnings() []error {
	if p.Enforce() {
		return nil
	}
	var out []error
	for _, err := range []error{p.BackendErr, p.InvariantErr} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// invariantLines are the invariants not held, one per line.
func (p *Plan) invariantLines() []string {
	if p.InvariantErr == nil {
		return nil
	}
	var ie *invariantError
	if errors.As(p.InvariantErr, &ie) {
		return strings.Split(ie.err.Error(), "\n")
	}
	return []string{p.InvariantErr.Error()}
}

// invariantError keeps the invariants' own message apart from the
// sentence create puts in front of it.
type invariantError struct{ err error }

func (e *invariantError) Error() string {
	return "the spec handed over breaks the profile's invariants: " + e.err.Error()
}

func (e *invariantError) Unwrap() error { return e.err }
