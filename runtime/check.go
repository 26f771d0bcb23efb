package runtime

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/pmezard/go-difflib/difflib"

	"bulkhead.dev/bulkhead/runtime/escape"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// CheckNotice is printed by every `bulkhead check`: the check reads a copy
// of the spec, so whatever it says is validation. Only the kernel, once
// the container runs, holds the boundary.
const CheckNotice = "validation, not containment: bulkhead check rewrote a copy of the spec and changed nothing. " +
	"The boundary is enforced by the kernel at run time (capabilities, mounts, namespaces, cgroups, seccomp) " +
	"and verified from the host after create; decisions whose layer is \"validation only\" have no kernel mechanism behind them."

// CheckReport is the result of a dry run of create: what the policy
// decides about a spec and what it would hand to the backend.
type CheckReport struct {
	Notice  string     `json:"notice"`
	Config  string     `json:"config"`
	Spec    string     `json:"spec"`
	Bundle  string     `json:"bundle"`
	Profile string     `json:"profile"`
	Backend string     `json:"backend"`
	Mode    specs.Mode `json:"mode"`
	// Argv is the backend's create command line, without the caller's
	// verb flags.
	Argv []string `json:"backend_argv"`
	// Runs is whether create would hand the container to the backend.
	Runs bool `json:"runs"`
	// Refusals are the messages that stop create (rules, the backend's
	// own validation); in audit mode they are recorded and do not stop it.
	Refusals  []string         `json:"refusals,omitempty"`
	Decisions []specs.Decision `json:"decisions"`
	// Invariants lists what specs.CheckInvariants still finds wrong in the
	// spec handed over; it is empty for an enforced, accepted spec.
	Invariants []string `json:"invariants,omitempty"`
	// Diff is a unified diff of config.json as given (re-indented) and as
	// bulkhead would write it; empty in audit mode and when create would
	// refuse.
	Diff string `json:"diff"`
	// Allowances is what a job may do under the profile and the error
	// it meets past that.
	Allowances []Allowance `json:"allowances"`
}

// CheckTarget resolves the argument of `bulkhead check`: a bundle
// directory (its config.json) or a config.json path, whose directory is
// then the bundle root.path resolves against.
func CheckTarget(bundle, config string) (specPath, bundleDir string, err error) {
	switch {
	case bundle != "" && config != "":
		return "", "", fmt.Errorf("check: give --bundle or a config.json, not both")
	case config != "":
		specPath = config
		if st, err := os.Stat(config); err == nil && st.IsDir() {
			specPath = filepath.Join(config, "config.json")
		}
	default:
		if bundle == "" {
			if bundle, err = os.Getwd(); err != nil {
				return "", "", err
			}
		}
		specPath = filepath.Join(bundle, "config.json")
	}
	if specPath, err = filepath.Abs(specPath); err != nil {
		return "", "", err
	}
	return specPath, filepath.Dir(specPath), nil
}

// DryRun plans create for the spec at specPath, as container id ("" for
// PlaceholderID), and reports the plan. It writes nothing: no state
// directory, no audit line, no config.json. The error is for a check that
// could not be made; a refused spec is a report with Runs false.
func DryRun(g *Globals, specPath, bundle, id string) (*CheckReport, error) {
	r, _, err := planAndReport(g, specPath, bundle, id)
	return r, err
}

// planAndReport is DryRun with the plan it reports.
func planAndReport(g *Globals, specPath, bundle, id string) (*CheckReport, *Plan, error) {
	if id != "" {
		if err := state.CheckID(id); err != nil {
			return nil, nil, err
		}
	}
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, nil, err
	}
	data, err := specs.ReadRegular(specPath, false)
	if err != nil {
		return nil, nil, fmt.Errorf("check: %w", err)
	}
	spec, err := specs.DecodeLenient(data)
	if err != nil {
		return nil, nil, fmt.Errorf("check %s: %w", specPath, err)
	}
	// A registry that is only read: joining a pod sandbox's namespace is
	// judged as create would, and nothing is created.
	if err := state.JudgeRoot(g.Root); err != nil {
		return nil, nil, err
	}
	reg := state.View(g.Root)
	// Judged by its real path, as create names the bundle it opened.
	if real, err := filepath.EvalSymlinks(bundle); err == nil {
		bundle = real
	}
	plan, err := MakePlan(PlanInput{Config: cfg, Globals: g, Bundle: bundle, ID: id, Spec: spec, Original: data, Registry: reg})
	if err != nil {
		return nil, nil, err
	}
	sel := plan.Selection
	r := &CheckReport{Notice: CheckNotice, Config: configName(g), Spec: specPath, Bundle: bundle,
		Profile: sel.Profile.Name, Backend: sel.Backend.Name, Mode: sel.Profile.Mode, Decisions: plan.Decisions,
		Allowances: Allowances(&sel.Profile, sel.Backend.IsGVisor())}
	r.Argv, _ = plan.BackendArgv("create", noValues{})
	if plan.RuleErr != nil {
		for _, d := range plan.Decisions {
			if d.Action == specs.Refused {
				r.Refusals = append(r.Refusals, fmt.Sprintf("rule %s refuses %s %s: %s", d.Rule, d.Field, d.Before, d.Why))
			}
		}
	}
	// The global flags create refuses (--rootless) are refused here too.
	flagErr := plan.FlagRefusal("create", noValues{})
	for _, err := range []error{plan.PlanErr, plan.BackendErr, flagErr} {
		if err != nil {
			r.Refusals = append(r.Refusals, err.Error())
		}
	}
	r.Invariants = plan.invariantLines()
	// Runs is what create does with the same plan: audit mode hands the
	// spec over whatever the rules, the backend's validation and the
	// invariants said (the installed backend has the last word), and
	// stops only where bulkhead cannot plan the hand-over at all.
	r.Runs = plan.Refusal() == nil && flagErr == nil
	// Nothing reaches the backend of a refused create: no diff, in the
	// JSON as in the text.
	if r.Runs && plan.Enforce() && plan.RuleErr == nil {
		if r.Diff, err = specDiff(spec, plan.Handed); err != nil {
			return nil, nil, err
		}
	}
	return r, plan, nil
}

func configName(g *Globals) string {
	if g.Config == "" {
		return "built-in"
	}
	if _, err := os.Stat(g.Config); err != nil && !g.explicit {
		return "built-in (" + g.Config + " absent)"
	}
	return g.Config
}

// specDiff is a unified diff of the two specs in bulkhead's own indented
// form, so that a compact or differently ordered original shows only the
// policy's changes.
func specDiff(before, after *rspec.Spec) (string, error) {
	a, err := specs.Marshal(before)
	if err != nil {
		return "", err
	}
	b, err := specs.Marshal(after)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(a) + "\n"), B: difflib.SplitLines(string(b) + "\n"),
		FromFile: "config.json (as given)", ToFile: "config.json (as bulkhead hands it to the backend)",
		Context: 3,
	})
}

// WriteText prints the report for a person: the notice first, then the
// verdict, the decisions by rule, and the diff.
func (r *CheckReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "bulkhead check: %s\n\n", r.Notice)
	fmt.Fprintf(&b, "spec:    %s\nconfig:  %s\nprofile: %s (mode %s)\nbackend: %s\nargv:    %s\n\n", r.Spec, r.Config, r.Profile, r.Mode, r.Backend, strings.Join(r.Argv, " "))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tFIELD\tACTION\tBEFORE\tAFTER\tLAYER\tWHY")
	for _, d := range r.Decisions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Rule, d.Field, d.Action, cell(d.Before), cell(d.After), d.Layer, d.Why)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\n%s\n", r.summary())
	for _, s := range r.Refusals {
		fmt.Fprintf(&b, "  refused: %s\n", s)
	}
	for _, s := range r.Invariants {
		fmt.Fprintf(&b, "  invariant not held: %s\n", s)
	}
	fmt.Fprintf(&b, "\nwhat a job may do under profile %s, and what fails past it:\n", r.Profile)
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, a := range r.Allowances {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", a.What, a.May, a.Fails)
	}
	tw.Flush()
	switch {
	case r.Mode == specs.Audit:
		b.WriteString("\naudit mode: the spec would reach the backend unchanged; no diff.\n")
	case !r.Runs:
		b.WriteString("\nno diff: create would refuse, and nothing would reach the backend.\n")
	case r.Diff == "":
		b.WriteString("\nno diff: the spec would reach the backend as given.\n")
	default:
		b.WriteString("\n" + r.Diff)
	}
	// Fields, values and reasons carry the caller's text: a sequence in an
	// annotation's name must not draw a verdict of its own.
	_, err := io.WriteString(w, escape.Terminal(b.String()))
	return err
}

// WriteJSON prints the report as one indented JSON document.
func (r *CheckReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *CheckReport) summary() string {
	counts := map[specs.Action]int{}
	for _, d := range r.Decisions {
		counts[d.Action]++
	}
	var parts []string
	for _, a := range []specs.Action{specs.Kept, specs.Tightened, specs.Added, specs.Removed, specs.Refused} {
		parts = append(parts, fmt.Sprintf("%d %s", counts[a], a))
	}
	tally := strings.Join(parts, ", ")
	switch {
	case r.Runs && r.Mode == specs.Audit && len(r.Refusals) > 0:
		return "verdict: WOULD RUN (audit mode; enforce mode would refuse it) — " + tally
	case r.Runs:
		return "verdict: WOULD RUN — " + tally
	default:
		return "verdict: REFUSED — " + tally
	}
}

// cell fits a value into the text table; --format json has it whole.
func cell(s string) string {
	const width = 60
	switch {
	case s == "":
		return "-"
	case len(s) > width:
		return s[:width-3] + "..."
	}
	return s
}

// RefusedRules names the rules that refused, sorted, for an error message.
func (r *CheckReport) RefusedRules() []string {
	seen := map[string]bool{}
	for _, d := range r.Decisions {
		if d.Action == specs.Refused {
			seen[d.Rule] = true
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
