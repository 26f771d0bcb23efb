package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/seccomp"
)

// seccompCommand is `bulkhead seccomp show`: the seccomp profile a
// container of a profile gets, as the backend receives it.
func seccompCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:  "seccomp",
		Usage: "inspect the seccomp profile containers get",
		Subcommands: []*cli.Command{{
			Name:  "show",
			Usage: "print the effective seccomp profile of a policy profile with counts of allowed and denied syscalls",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "profile", Usage: "policy profile (default: as create would select)"},
				&cli.StringFlag{Name: "format", Value: "text", Usage: "output: text or json"},
			},
			OnUsageError: usageError,
			Action: func(c *cli.Context) error {
				if c.NArg() > 0 {
					return fmt.Errorf("seccomp show: unexpected argument %q", c.Args().First())
				}
				format := c.String("format")
				if format != "text" && format != "json" {
					return fmt.Errorf("seccomp show --format %q: want text or json", format)
				}
				if p := c.String("profile"); p != "" {
					g.Profile = p
				}
				r, err := showSeccomp(g, c.IsSet("config"))
				if err != nil {
					return err
				}
				if format == "json" {
					return r.writeJSON(os.Stdout)
				}
				return r.writeText(os.Stdout)
			},
		}},
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			return fmt.Errorf("seccomp: want a subcommand: show")
		},
	}
}

// seccompReport is what `seccomp show` prints; its JSON form is the
// --format json output.
type seccompReport struct {
	Profile string `json:"profile"`
	Backend string `json:"backend"`
	// Source is "built-in" or the path of the operator's moby-format file.
	Source string `json:"source"`
	// Allowed and Denied count distinct names (seccomp.Summary): allowed by
	// some rule, or named only by denying rules. Every other syscall gets
	// the default action.
	Allowed int `json:"allowed"`
	Denied  int `json:"denied"`
	// DeniedList is bulkhead's own list of syscalls refused on top of
	// Docker's profile, and AllowedFromDeniedList those of them this
	// profile lets run (an operator's file may).
	DeniedList            []string `json:"denied_list"`
	AllowedFromDeniedList []string `json:"allowed_from_denied_list"`
	// BackendNotes say how the profile was adapted for the backend (runsc).
	BackendNotes []string            `json:"backend_notes,omitempty"`
	Libseccomp   string              `json:"libseccomp"`
	Notice       string              `json:"notice"`
	Seccomp      *rspec.LinuxSeccomp `json:"seccomp"`
}

const seccompNotice = "validation, not containment: every name resolved on x86_64, aarch64 and the listed architectures and the profile compiled with libseccomp; the kernel enforces it once the backend installs it"

func showSeccomp(g *runtime.Globals, explicitConfig bool) (*seccompReport, error) {
	cfg, err := runtime.LoadConfig(g.Config, explicitConfig)
	if err != nil {
		return nil, err
	}
	sel, err := runtime.Select(cfg, g, nil)
	if err != nil {
		return nil, err
	}
	p, err := seccomp.ForProfile(sel.Profile.Seccomp, sel.Profile.CompatSyscalls, sel.Profile.ExecutesWrites())
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", sel.Profile.Name, err)
	}
	major, minor, micro := libseccomp.GetLibraryVersion()
	r := &seccompReport{
		Profile:    sel.Profile.Name,
		Backend:    sel.Backend.Name,
		Source:     "built-in",
		DeniedList: seccomp.Denied,
		Libseccomp: fmt.Sprintf("%d.%d.%d", major, minor, micro),
		Notice:     seccompNotice,
		Seccomp:    p,
	}
	if sel.Profile.Seccomp != "" {
		r.Source = sel.Profile.Seccomp
	}
	if sel.Backend.IsGVisor() {
		r.BackendNotes = backend.TranslateSeccompForGVisor(p)
	}
	r.Allowed, r.Denied = seccomp.Summary(p)
	r.AllowedFromDeniedList = []string{}
	for _, name := range seccomp.Denied {
		if mayAllow(p, name) {
			r.AllowedFromDeniedList = append(r.AllowedFromDeniedList, name)
		}
	}
	return r, nil
}

// mayAllow reports whether some rule may let name run (with or without
// conditions), or no rule names it and the default action lets it run.
func mayAllow(p *rspec.LinuxSeccomp, name string) bool {
	named := false
	for _, r := range p.Syscalls {
		if !slices.Contains(r.Names, name) {
			continue
		}
		named = true
		if r.Action == rspec.ActAllow || r.Action == rspec.ActLog {
			return true
		}
	}
	return !named && (p.DefaultAction == rspec.ActAllow || p.DefaultAction == rspec.ActLog)
}

func (r *seccompReport) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *seccompReport) writeText(w io.Writer) error {
	var b strings.Builder
	p := r.Seccomp
	fmt.Fprintf(&b, "profile %s, backend %s, seccomp profile %s\n", r.Profile, r.Backend, r.Source)
	fmt.Fprintf(&b, "%s (libseccomp %s)\n", r.Notice, r.Libseccomp)
	fmt.Fprintf(&b, "default action: %s\n", action(p.DefaultAction, p.DefaultErrnoRet))
	arches := make([]string, len(p.Architectures))
	for i, a := range p.Architectures {
		arches[i] = string(a)
	}
	fmt.Fprintf(&b, "architectures: %s\n", strings.Join(arches, " "))
	fmt.Fprintf(&b, "allowed: %d syscall names (some exist only on the 32-bit or arm architectures); denied by a rule: %d; every other syscall: the default action\n", r.Allowed, r.Denied)
	if len(r.AllowedFromDeniedList) == 0 {
		fmt.Fprintf(&b, "bulkhead's denied list (%d): all denied\n", len(r.DeniedList))
	} else {
		fmt.Fprintf(&b, "bulkhead's denied list (%d): ALLOWED by this profile: %s\n", len(r.DeniedList), strings.Join(r.AllowedFromDeniedList, " "))
	}
	for _, n := range r.BackendNotes {
		fmt.Fprintf(&b, "%s: %s\n", r.Backend, n)
	}
	b.WriteString("rules:\n")
	for _, s := range p.Syscalls {
		var conds []string
		for _, a := range s.Args {
			conds = append(conds, condition(a))
		}
		head := "  " + action(s.Action, s.ErrnoRet)
		if len(conds) > 0 {
			head += " if " + strings.Join(conds, " and ")
		}
		b.WriteString(head + ":\n")
		b.WriteString(wrap(s.Names, "      ", 100))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func action(a rspec.LinuxSeccompAction, errnoRet *uint) string {
	if errnoRet == nil {
		return string(a)
	}
	if name := unix.ErrnoName(syscall.Errno(*errnoRet)); name != "" {
		return fmt.Sprintf("%s(%s)", a, name)
	}
	return fmt.Sprintf("%s(%d)", a, *errnoRet)
}

func condition(a rspec.LinuxSeccompArg) string {
	switch a.Op {
	case rspec.OpMaskedEqual:
		return fmt.Sprintf("arg%d & %#x == %#x", a.Index, a.Value, a.ValueTwo)
	case rspec.OpEqualTo:
		return fmt.Sprintf("arg%d == %#x", a.Index, a.Value)
	case rspec.OpNotEqual:
		return fmt.Sprintf("arg%d != %#x", a.Index, a.Value)
	case rspec.OpLessThan:
		return fmt.Sprintf("arg%d < %#x", a.Index, a.Value)
	case rspec.OpLessEqual:
		return fmt.Sprintf("arg%d <= %#x", a.Index, a.Value)
	case rspec.OpGreaterThan:
		return fmt.Sprintf("arg%d > %#x", a.Index, a.Value)
	case rspec.OpGreaterEqual:
		return fmt.Sprintf("arg%d >= %#x", a.Index, a.Value)
	}
	return fmt.Sprintf("arg%d %s %#x %#x", a.Index, a.Op, a.Value, a.ValueTwo)
}

// wrap lists names on lines of at most width columns.
func wrap(names []string, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, n := range names {
		if len(line) > len(indent) && len(line)+1+len(n) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += n
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
	return b.String()
}
