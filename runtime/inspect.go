package runtime

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/escape"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/verify"
	"bulkhead.dev/bulkhead/specs"
)

// Inspection is what `bulkhead inspect` shows of one container.
type Inspection struct {
	ID          string           `json:"id"`
	Status      string           `json:"status"`
	Profile     string           `json:"profile"`
	Backend     string           `json:"backend"`
	Mode        specs.Mode       `json:"mode"`
	Bundle      string           `json:"bundle"`
	Created     time.Time        `json:"created"`
	InitPid     int              `json:"init_pid,omitempty"`
	CgroupsPath string           `json:"cgroups_path,omitempty"`
	MaxLifetime string           `json:"max_lifetime,omitempty"`
	Deadline    *time.Time       `json:"deadline,omitempty"`
	TimeLeft    string           `json:"time_left,omitempty"`
	WatchdogPid int              `json:"watchdog_pid,omitempty"`
	Watchdog    string           `json:"watchdog,omitempty"`
	Decisions   []specs.Decision `json:"decisions"`
	Checks      []verify.Check   `json:"verification"`
}

// Inspect reads bulkhead's record of id and asks the owning backend for
// its status.
func Inspect(g *Globals, id string) (*Inspection, error) {
	if err := state.CheckID(id); err != nil {
		return nil, err
	}
	b, reg, rec, err := owner(g, id)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("container %s: bulkhead has no record of it under %s", id, g.Root)
	}
	in := &Inspection{ID: id, Profile: rec.Profile, Backend: rec.Backend, Mode: rec.Mode, Bundle: rec.Bundle,
		Created: rec.Created, InitPid: rec.InitPid, CgroupsPath: rec.CgroupsPath, MaxLifetime: rec.MaxLifetime,
		Deadline: rec.Deadline, WatchdogPid: rec.WatchdogPid}
	f, err := reg.Findings(id)
	if err != nil {
		return nil, err
	}
	in.Decisions, in.Checks = f.Decisions, f.Checks
	in.Status = "unknown to " + b.Name
	if st, err := askBackendState(g, b, id); err == nil && st.Status != "" {
		in.Status = st.Status
	}
	switch {
	case rec.MaxLifetime == "":
	case in.Status == "stopped":
		in.TimeLeft = "none: it has stopped"
	case rec.Deadline != nil:
		in.TimeLeft = max(time.Until(*rec.Deadline), 0).Truncate(time.Second).String()
	case rec.Mode != specs.Enforce:
		in.TimeLeft = "not enforced (audit mode)"
	case in.Status == "created":
		in.TimeLeft = rec.MaxLifetime + " from start (not started yet)"
	default:
		// Started: the watchdog sees it within its poll and records the
		// deadline, a fraction of a second after start.
		in.TimeLeft = rec.MaxLifetime + " from start (started; the watchdog is arming the deadline)"
	}
	if rec.WatchdogPid > 0 {
		in.Watchdog = "gone"
		if unix.Kill(rec.WatchdogPid, 0) == nil && runsVerb(cmdline(rec.WatchdogPid), WatchdogVerb, id) {
			in.Watchdog = "running"
		}
	}
	return in, nil
}

// WriteJSON writes the inspection as one indented JSON document.
func (in *Inspection) WriteJSON(w io.Writer) error {
	return writeShownJSON(w, in, "  ")
}

// WriteText writes the inspection for people.
func (in *Inspection) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, escape.Text(v)) }
	row("id", in.ID)
	row("status", in.Status)
	row("profile", fmt.Sprintf("%s (%s)", in.Profile, in.Mode))
	row("backend", in.Backend)
	row("bundle", in.Bundle)
	row("created", in.Created.Format(time.RFC3339))
	if in.InitPid > 0 {
		row("init pid", fmt.Sprint(in.InitPid))
	}
	if in.CgroupsPath != "" {
		row("cgroup", in.CgroupsPath)
	}
	if in.MaxLifetime == "" {
		row("max lifetime", "none")
	} else {
		row("max lifetime", in.MaxLifetime)
		if in.Deadline != nil {
			row("deadline", in.Deadline.Local().Format(time.RFC3339))
		}
		row("time left", in.TimeLeft)
		if in.WatchdogPid > 0 {
			row("watchdog", fmt.Sprintf("pid %d, %s", in.WatchdogPid, in.Watchdog))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ndecisions (%d):\n", len(in.Decisions))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, d := range in.Decisions {
		change := d.After
		if d.Before != "" && d.Before != d.After {
			change = d.Before + " -> " + d.After
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t[%s] %s\n", d.Rule, escape.Text(d.Field), d.Action, escape.Text(change), d.Layer, escape.Text(d.Why))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nverification (%d checks):\n", len(in.Checks))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range in.Checks {
		verdict := "ok"
		if !c.OK {
			verdict = "MISMATCH"
		}
		fmt.Fprintf(tw, "  %s\t%s\texpected %s\tobserved %s\n", verdict, c.Control, escape.Text(c.Expected), escape.Text(c.Observed))
	}
	return tw.Flush()
}
