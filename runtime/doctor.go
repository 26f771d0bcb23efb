package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/backend"
)

// Status is the verdict of one doctor check. Only fail makes doctor exit
// non-zero; warn names something an operator should know that does not
// weaken the boundary of the containers bulkhead does run.
type Status string

const (
	StatusOK   Status = "ok"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
)

// DoctorCheck is one line of `bulkhead doctor`: what was looked at, what
// was found there, the verdict and, unless ok, what to do.
type DoctorCheck struct {
	Name   string `json:"check"`
	Status Status `json:"status"`
	// Looked is what the check read or ran: a file, a command line.
	Looked string `json:"looked_at"`
	Found  string `json:"found"`
	Fix    string `json:"fix,omitempty"`
}

// DoctorReport is every check of one doctor run, in the order they ran.
type DoctorReport struct {
	Checks []DoctorCheck `json:"checks"`
}

// DoctorOptions configure one doctor run. Tests point the host checks at
// fixtures; the zero value reads this host.
type DoctorOptions struct {
	// Backend limits the backend and live checks to one configured
	// backend; empty means every configured backend.
	Backend string
	// Live runs one throwaway container through each backend.
	Live bool
	// Bulkhead is the executable the live check creates containers with
	// (default: the running one).
	Bulkhead string
	// Cgroups points the cgroup checks at a fixture tree
	// (cgroups.WithV1Root, cgroups.WithV2Mountpoint).
	Cgroups []cgroups.Option
	// Changelog finds the distribution changelog of a backend binary
	// (default: distroChangelog, dpkg then rpm).
	Changelog func(binary string) (*Changelog, error)
	// DockerConfig and ContainerdConfig are the engine configurations
	// whose registrations are checked (default: the engines' own paths).
	DockerConfig     string
	ContainerdConfig string
}

// Failed returns the checks that failed.
func (r *DoctorReport) Failed() []DoctorCheck {
	var out []DoctorCheck
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many checks have status s.
func (r *DoctorReport) Count(s Status) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}

func (r *DoctorReport) add(c DoctorCheck) { r.Checks = append(r.Checks, c) }

// Doctor judges whether this host can hold the boundary: the configuration
// file, each configured backend (found, runs, version, known escape CVEs),
// the kernel features and cgroup controllers bulkhead relies on, the
// directories it keeps state and audit records in, the engines'
// registrations and, with opt.Live, one verified container per backend.
// It never stops at the first failure: every check gets its line.
func Doctor(ctx context.Context, g *Globals, opt DoctorOptions) *DoctorReport {
	if opt.Changelog == nil {
		opt.Changelog = distroChangelog
	}
	r := &DoctorReport{}
	cfg, cfgCheck := doctorConfig(g)
	r.add(cfgCheck)
	names := slices.Sorted(maps.Keys(cfg.Backends))
	if opt.Backend != "" {
		if _, ok := cfg.Backends[opt.Backend]; !ok {
			r.add(DoctorCheck{Name: "backend " + opt.Backend, Status: StatusFail, Looked: "[backends] of the configuration",
				Found: "not configured; configured backends are " + strings.Join(names, ", "),
				Fix:   "name one of those with --backend, or add [backends." + opt.Backend + "] with its path"})
			names = nil
		} else {
			names = []string{opt.Backend}
		}
	}
	var usable []*backend.Backend
	for _, name := range names {
		b, checks := doctorBackend(cfg, name, opt.Changelog)
		for _, c := range checks {
			r.add(c)
		}
		if b != nil {
			usable = append(usable, b)
		}
	}
	for _, c := range doctorHost(cfg, opt.Cgroups) {
		r.add(c)
	}
	for _, c := range doctorDirs(g, cfg) {
		r.add(c)
	}
	for _, c := range doctorEngines(opt) {
		r.add(c)
	}
	if opt.Live {
		for _, b := range usable {
			r.add(doctorLive(ctx, g, opt, b.Name))
		}
	}
	return r
}

// doctorConfig loads the configuration as create would and judges its
// file. When the file is refused, the built-in configuration stands in so
// the other checks still run; create would refuse every container.
func doctorConfig(g *Globals) (*Config, DoctorCheck) {
	c := DoctorCheck{Name: "config file", Looked: g.Config}
	if g.Config == "" {
		c.Looked = "(none)"
	}
	builtin, err := LoadConfig("", false)
	if err != nil {
		// The embedded configuration is part of the binary; it failing
		// to load is a build defect, not a host problem.
		panic(err)
	}
	if g.Config == "" {
		c.Status, c.Found = StatusOK, "no file: the built-in configuration applies"
		return builtin, c
	}
	st, err := os.Stat(g.Config)
	if os.IsNotExist(err) && !g.explicit {
		c.Status, c.Found = StatusOK, "absent: the built-in configuration applies"
		return builtin, c
	}
	if err == nil {
		c.Found = fmt.Sprintf("mode %04o, %s", st.Mode().Perm(), ownerOf(st))
	}
	cfg, err := g.LoadConfig()
	if err != nil {
		c.Status, c.Found = StatusFail, err.Error()
		c.Fix = "create refuses every container until this is fixed: make the file root's and writable only by root (chown root:root; chmod 0644), or correct the key named"
		return builtin, c
	}
	c.Status = StatusOK
	c.Found += ", loads"
	return cfg, c
}

// WriteText prints one line per check: status, check, what was looked at
// and found, and what to do. A summary line ends it.
func (r *DoctorReport) WriteText(w io.Writer) error {
	width := 0
	for _, c := range r.Checks {
		width = max(width, len(c.Name))
	}
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%-4s  %-*s  %s: %s", c.Status, width, c.Name, c.Looked, c.Found)
		if c.Fix != "" {
			fmt.Fprintf(&b, " -- fix: %s", c.Fix)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "doctor: %d ok, %d warn, %d fail\n", r.Count(StatusOK), r.Count(StatusWarn), r.Count(StatusFail))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the report as one JSON document.
func (r *DoctorReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Checks []DoctorCheck `json:"checks"`
		OK     int           `json:"ok"`
		Warn   int           `json:"warn"`
		Fail   int           `json:"fail"`
	}{r.Checks, r.Count(StatusOK), r.Count(StatusWarn), r.Count(StatusFail)})
}

// Err is nil when no check failed, otherwise an error naming the failed
// checks: the exit of `bulkhead doctor`.
func (r *DoctorReport) Err() error {
	f := r.Failed()
	if len(f) == 0 {
		return nil
	}
	var names []string
	for _, c := range f {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	return fmt.Errorf("doctor: %d failed: %s", len(f), strings.Join(names, "; "))
}

// doctorTimeout bounds each command doctor runs (a backend's --version,
// features): a hanging binary is a fail, not a hang.
const doctorTimeout = 10 * time.Second
