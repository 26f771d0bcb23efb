package probe

import (
	"encoding/json"
	"fmt"
	"io"
	goruntime "runtime"
	"strings"
	"text/tabwriter"
	"time"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/probe/protocol"
	"bulkhead.dev/bulkhead/runtime/verify"
)

// Line is one line the probe printed.
type Line = protocol.Line

// Control is one row of the probe's verdict: what was attempted from
// inside, what the kernel answered, which layer answered, what the host's
// cgroup counters showed meanwhile, and whether the control held.
//
// Result is "pass", "fail" or "skipped": a control whose attempt was not
// made is neither, and Pass is true only for "pass". A row without any
// observation fails, its Detail starting with "no evidence".
type Control struct {
	Name     string `json:"name"`
	Attempt  string `json:"attempt"`
	Observed string `json:"observed"`
	Layer    string `json:"layer"`
	Evidence string `json:"host_evidence,omitempty"`
	Pass     bool   `json:"pass"`
	Result   string `json:"result"`
	// Detail is the probe's own explanation (or the host's), for a row
	// that did not pass.
	Detail   string             `json:"detail,omitempty"`
	Syscalls []protocol.Syscall `json:"syscalls,omitempty"`
}

// Report is the outcome of one `bulkhead probe`.
type Report struct {
	ID      string `json:"id"`
	Profile string `json:"profile"`
	Mode    string `json:"mode"`
	Backend string `json:"backend"`
	// Finished says the probe printed its done line.
	Finished bool      `json:"finished"`
	Controls []Control `json:"controls"`
	// Verification is what create verified from the host before the probe
	// started (verify.Container).
	Verification []verify.Check `json:"verification,omitempty"`
	Pass         bool           `json:"pass"`
	Error        string         `json:"error,omitempty"`
}

// Outcomes of a row.
const (
	Pass    = "pass"
	Fail    = "fail"
	Skipped = "skipped"
)

// noEvidence starts the Detail of a row that had nothing to judge.
const noEvidence = "no evidence"

// Failed lists the names of the controls that did not hold.
func (r *Report) Failed() []string { return r.named(Fail) }

// Skipped lists the names of the controls whose attempt was not made:
// no evidence either way, so `bulkhead probe` does not pass with them.
func (r *Report) Skipped() []string { return r.named(Skipped) }

func (r *Report) named(result string) []string {
	var out []string
	for _, c := range r.Controls {
		if c.Result == result {
			out = append(out, c.Name)
		}
	}
	return out
}

// Sample is the host's reading of the cgroup counters when one line
// arrived: Before is the reading at the previous line, so After-Before is
// what that control's attempt did (controls run one after another, and each
// ends its children before printing).
type Sample struct {
	Before, After cgroups.Events
	OK            bool          // both readings succeeded
	Wall          time.Duration // between the two readings
}

// Host is what the host knows besides the probe's lines.
type Host struct {
	Limits              *cgroups.Limits
	GVisor              bool
	HostFolderUnchanged bool
}

// Host-side layers.
const (
	layerMemoryGVisor = "memory cgroup (host OOM killer ends the whole sandbox)"
)

// Judge turns the probe's lines and the host's counter samples into
// the report's rows. gvisor relaxes what only gVisor answers differently
// (the probe itself was told with -gvisor); the verdict for cpu, pids and
// memory always needs host evidence. hostFolderUnchanged tells whether the
// host folder behind /workspace is as the probe's bundle made it; for a
// copy-on-write workspace that is the evidence that the sandbox's write
// never reached the host.
func Judge(out Output, h Host) []Control {
	var rows []Control
	for _, name := range protocol.Controls {
		l, ok := out.lines[name]
		row := Control{Name: name, Attempt: l.Attempt, Observed: l.Observed, Layer: l.Layer, Syscalls: l.Syscalls}
		if !ok {
			row.Observed, row.Layer = "no line", protocol.LayerNone
			row.Detail = noEvidence + ": the probe printed no line for this control"
		}
		row.Pass = ok && l.Pass && !l.Skipped
		s, sampled := out.samples[name]
		switch name {
		case "workspace":
			judgeWorkspace(&row, l, ok, h.HostFolderUnchanged)
		case "pids":
			judgePids(&row, l, s, sampled, h.Limits, h.GVisor)
		case "memory":
			judgeMemory(&row, l, ok, s, sampled, h.Limits, h.GVisor, out.Finished && out.ended)
		case "cpu":
			judgeCPU(&row, l, ok, s, sampled, h.Limits, h.GVisor)
		}
		switch {
		case row.Pass:
			row.Result = Pass
		case ok && l.Skipped && !hostJudged(name, h.GVisor):
			row.Result = Skipped
		default:
			row.Result = Fail
		}
		if !row.Pass && ok && row.Detail == "" {
			row.Detail = l.Detail
		}
		rows = append(rows, row)
	}
	return rows
}

// hostJudged: under gVisor the probe leaves these to the host's counters,
// so a skipped line there is no skipped control.
func hostJudged(name string, gvisor bool) bool {
	return gvisor && (name == "cpu" || name == "pids" || name == "memory")
}

// judgeWorkspace: EROFS inside proves a read-only bind; a write that went
// through holds only if the host folder is unchanged (copy-on-write).
func judgeWorkspace(row *Control, l Line, ok, hostFolderUnchanged bool) {
	if !ok || l.Observed != "written" {
		return
	}
	row.Pass = hostFolderUnchanged
	row.Layer = "copy-on-write workspace"
	row.Evidence = "host folder unchanged"
	if !hostFolderUnchanged {
		row.Layer = protocol.LayerNone
		row.Evidence = "host folder CHANGED"
	}
}

func limitText(file string, v int64, have bool) string {
	if !have {
		return ""
	}
	return fmt.Sprintf(" (%s %s)", file, cgroups.String(v))
}

// judgePids: on runc the probe's EAGAIN must come with pids.events max
// growing; under gVisor, gVisor's RLIMIT_NPROC EAGAIN inside also holds.
func judgePids(row *Control, l Line, s Sample, sampled bool, limits *cgroups.Limits, gvisor bool) {
	if !sampled || !s.OK {
		row.Evidence = "no cgroup reading"
		row.Pass = false
		return
	}
	grew := s.After.PidsMax - s.Before.PidsMax
	limit := limitOf(limits, "pids")
	row.Evidence = fmt.Sprintf("pids.events max +%d%s", grew, limitText("pids.max", limit, limits != nil))
	switch {
	case limit <= 0:
		// A refused fork without the group's own limit is a parent's or
		// the host's (pids.events counts those too), not the control. A
		// line that failed by itself keeps its own word.
		row.Pass = false
		if l.Pass {
			row.Detail = noEvidence + ": the container's pids cgroup has no limit"
		}
	case grew > 0 && l.Observed == "EAGAIN":
		row.Layer, row.Pass = protocol.LayerPids, true
	case gvisor && l.Pass && !l.Skipped && l.Observed == "EAGAIN":
		row.Pass = true // the layer is the probe's: gVisor's RLIMIT_NPROC
	default:
		row.Pass = false
	}
}

// judgeMemory: on runc the child's SIGKILL must come with memory oom_kill
// (or the failure counter) growing; under gVisor the attempt runs after
// the done line, the host OOM killer ends the sandbox, and oom_kill decides.
// A sandbox still running when the host stopped waiting (no line, no EOF)
// is no evidence: the read timed out, the limit did not show.
// layerMemoryGVisorSentry: under load gVisor sometimes ends the sandbox
// before the host's OOM killer counts a kill.
const layerMemoryGVisorSentry = "gVisor (Sentry): sandbox ended at the memory limit"

func judgeMemory(row *Control, l Line, ok bool, s Sample, sampled bool, limits *cgroups.Limits, gvisor, endedAfterDone bool) {
	if gvisor && !ok {
		row.Attempt = "child touches memory past the limit (after the done line)"
		if !endedAfterDone {
			// Either the sandbox outlived the host's wait, or it ended
			// before the done line, so before the attempt was made.
			row.Observed = "no line"
			row.Detail = noEvidence + ": no memory line, and the sandbox did not end after the done line"
			row.Pass = false
			return
		}
		row.Observed = "sandbox ended"
	}
	if !sampled || !s.OK {
		row.Evidence = "no cgroup reading"
		row.Pass = false
		return
	}
	oom := s.After.OOMKills - s.Before.OOMKills
	fail := s.After.MemoryFailcnt - s.Before.MemoryFailcnt
	limit := limitOf(limits, "memory")
	peak := s.After.MemoryPeak
	row.Evidence = fmt.Sprintf("memory oom_kill +%d, failcnt +%d, peak %d%s", oom, fail, peak, limitText("limit", limit, limits != nil))
	// Every verdict needs the group's own limit, reached: an OOM kill or
	// a sandbox's end without it is the host's memory or a parent
	// group's running out, a deadline or a crash, not the control.
	// failcnt grows only where the group's own counter refused a charge.
	limited := limit > 0
	reached := fail > 0 || reachedLimit(peak, limit)
	switch {
	case !limited || !reached:
		row.Pass = false
		// A line that failed by itself keeps its own word.
		if l.Pass || !ok {
			row.Detail = noEvidence + ": " + memoryUnproven(limited)
		}
	case gvisor && !ok && oom > 0:
		row.Layer, row.Pass = layerMemoryGVisor, true
	case gvisor && !ok:
		// The sandbox ended during the allocation at the limit with no
		// host OOM kill counted: gVisor's own memory accounting (it
		// sizes itself to the cgroup limit verified at create) ended it
		// first. The job still could not take more than the limit.
		row.Layer, row.Pass = layerMemoryGVisorSentry, true
	case l.Observed == "SIGKILL" && l.Pass && (oom > 0 || fail > 0):
		row.Layer, row.Pass = protocol.LayerMemory, true
	default:
		row.Pass = false
	}
}

// memoryUnproven says why the memory group's own limit is not what ended
// the attempt.
func memoryUnproven(limited bool) string {
	if !limited {
		return "the container's memory cgroup has no limit"
	}
	return "the container's memory never reached its limit"
}

// reachedLimit tells whether a group's peak came within 1/16 of its
// limit: what gVisor's own accounting leaves of it, where its end is the
// limit's doing.
func reachedLimit(peak uint64, limit int64) bool {
	return limit > 0 && peak >= uint64(limit-limit/16)
}

// layerCPUHostCPUs: a quota of as many CPUs as the host has, or more,
// cannot throttle a spin: the host's CPUs are the bound, and the group's
// usage over the wall time shows it stayed within them.
const layerCPUHostCPUs = "cpu cgroup (quota ≥ the host's CPUs)"

// hostCPUs is how many CPUs the host gives the group's processes at most.
var hostCPUs = goruntime.NumCPU

// judgeCPU: the quota must have throttled the group while the probe spun
// (cpu.stat nr_throttled growing) and the group must have used no more
// CPU than the quota allows over the same wall time. On runc the probe's
// own line, judged by the same counters from inside, must hold too; under
// gVisor the probe cannot see the host's cgroup and the host decides.
func judgeCPU(row *Control, l Line, ok bool, s Sample, sampled bool, limits *cgroups.Limits, gvisor bool) {
	if !ok {
		return
	}
	if !sampled || !s.OK {
		row.Evidence = "no cgroup reading"
		row.Pass = false
		return
	}
	grew := s.After.NrThrottled - s.Before.NrThrottled
	used := s.After.CPUUsage - s.Before.CPUUsage
	quota := time.Duration(-1)
	quotaText := "no quota"
	if limits != nil && limits.CPUQuota > 0 && limits.CPUPeriod > 0 {
		quota = time.Duration(limits.CPUQuota) * time.Microsecond
		quotaText = fmt.Sprintf("quota %s/%s", cgroups.String(limits.CPUQuota), cgroups.String(limits.CPUPeriod))
	}
	row.Evidence = fmt.Sprintf("cpu.stat nr_throttled +%d, throttled %s; usage %s over %s (%s)", grew,
		(s.After.ThrottledTime - s.Before.ThrottledTime).Round(time.Millisecond), used.Round(time.Millisecond), s.Wall.Round(time.Millisecond), quotaText)
	var allowed time.Duration
	if quota > 0 {
		// The quota is per period; allow the periods cut at either end.
		allowed = time.Duration(float64(s.Wall)*float64(limits.CPUQuota)/float64(limits.CPUPeriod)) + 2*quota
	}
	switch {
	case quota <= 0:
		row.Pass = false
		row.Detail = "the cgroup has no CPU quota"
	case used > allowed:
		row.Pass = false
		row.Detail = fmt.Sprintf("the group used more CPU than the quota allows (%s)", allowed.Round(time.Millisecond))
	case grew == 0 && float64(limits.CPUQuota)/float64(limits.CPUPeriod) >= float64(hostCPUs()):
		// A job profile's 2 CPUs on a 2-CPU host: the spin cannot pass
		// the quota, so it is never throttled; usage within the quota
		// over the wall time (checked above) is the evidence.
		row.Layer, row.Pass = layerCPUHostCPUs, true
		row.Evidence += fmt.Sprintf("; the host has %d CPUs", hostCPUs())
	case grew == 0:
		row.Pass = false
		row.Detail = noEvidence + ": the quota never throttled the spin"
	case gvisor:
		row.Layer, row.Pass = protocol.LayerCPU, true
	default:
		row.Pass = l.Pass && !l.Skipped
		if row.Pass {
			row.Layer = protocol.LayerCPU
		}
	}
}

func limitOf(l *cgroups.Limits, what string) int64 {
	if l == nil {
		return cgroups.Absent
	}
	switch what {
	case "pids":
		return l.PidsMax
	case "memory":
		return l.MemoryMax
	}
	return cgroups.Absent
}

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the table: one row per control, then the verdict.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "bulkhead probe: profile %s (%s) on %s, container %s\n", r.Profile, r.Mode, r.Backend, r.ID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTROL\tATTEMPT\tOBSERVED\tLAYER\tHOST EVIDENCE\tRESULT")
	for _, c := range r.Controls {
		verdict := strings.ToUpper(c.Result)
		if verdict == "" {
			verdict = "FAIL"
		}
		ev := c.Evidence
		if ev == "" {
			ev = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, probeCell(c.Attempt, 44), probeCell(c.Observed, 40), c.Layer, ev, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Controls {
		if c.Result != Pass && c.Detail != "" {
			fmt.Fprintf(w, "  %s: %s\n", c.Name, c.Detail)
		}
	}
	ok := 0
	for _, c := range r.Verification {
		if c.OK {
			ok++
		}
	}
	if len(r.Verification) > 0 {
		fmt.Fprintf(w, "host verification at create: %d/%d checks as expected\n", ok, len(r.Verification))
	}
	if !r.Finished {
		fmt.Fprintln(w, "the probe did not print its done line: it died or timed out")
	}
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
	if r.Pass {
		fmt.Fprintf(w, "every control held (%d/%d)\n", len(r.Controls), len(r.Controls))
	}
	if f := r.Failed(); len(f) > 0 {
		fmt.Fprintf(w, "FAILED: %s\n", strings.Join(f, ", "))
	}
	if sk := r.Skipped(); len(sk) > 0 {
		fmt.Fprintf(w, "SKIPPED (no evidence either way): %s\n", strings.Join(sk, ", "))
	}
	return nil
}

// probeCell shortens a table cell to n runes.
func probeCell(s string, n int) string {
	if s == "" {
		return "-"
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
