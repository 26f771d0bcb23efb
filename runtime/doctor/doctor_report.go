package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"bulkhead.dev/bulkhead/cgroups"
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

// Check is one line of `bulkhead doctor`: what was looked at, what
// was found there, the verdict and, unless ok, what to do.
type Check struct {
	Name   string `json:"check"`
	Status Status `json:"status"`
	// Looked is what the check read or ran: a file, a command line.
	Looked string `json:"looked_at"`
	Found  string `json:"found"`
	Fix    string `json:"fix,omitempty"`
}

// Report is every check of one doctor run, in the order they ran.
type Report struct {
	Checks []Check `json:"checks"`
}

// Options configure one doctor run. Tests point the host checks at
// fixtures; the zero value reads this host.
type Options struct {
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
	// (default: DistroChangelog, dpkg then rpm).
	Changelog func(binary string) (*Changelog, error)
	// DockerConfig and ContainerdConfig are the engine configurations
	// whose registrations are checked (default: the engines' own paths).
	DockerConfig     string
	ContainerdConfig string
}

// Failed returns the checks that failed.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many checks have status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}

func (r *Report) Add(c Check) { r.Checks = append(r.Checks, c) }

// WriteText prints one line per check: status, check, what was looked at
// and found, and what to do. A summary line ends it.
func (r *Report) WriteText(w io.Writer) error {
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
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Checks []Check `json:"checks"`
		OK     int     `json:"ok"`
		Warn   int     `json:"warn"`
		Fail   int     `json:"fail"`
	}{r.Checks, r.Count(StatusOK), r.Count(StatusWarn), r.Count(StatusFail)})
}

// Err is nil when no check failed, otherwise an error naming the failed
// checks: the exit of `bulkhead doctor`.
func (r *Report) Err() error {
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

// Timeout bounds each command doctor runs (a backend's --version,
// features): a hanging binary is a fail, not a hang.
const Timeout = 10 * time.Second
