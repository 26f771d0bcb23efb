package runtime

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"bulkhead.dev/bulkhead/cgroups"
)

// ProbeControls are the controls `bulkhead probe` expects a line for, in
// the probe's order (cmd/bulkhead-probe/main.go). A control without a line
// fails: silence is never a pass.
var ProbeControls = []string{
	"workspace", "etc", "tmp-write", "tmp-noexec", "tmp-size", "uid", "capabilities", "no_new_privs",
	"network", "seccomp", "masked-proc", "proc-sys", "environment", "devices", "cpu", "pids", "memory",
}

// ProbeLine is one line the probe printed (cmd/bulkhead-probe/result.go).
type ProbeLine struct {
	Control  string          `json:"control"`
	Attempt  string          `json:"attempt"`
	Observed string          `json:"observed"`
	Layer    string          `json:"layer"`
	Pass     bool            `json:"pass"`
	Skipped  bool            `json:"skipped,omitempty"`
	Value    *float64        `json:"value,omitempty"`
	Detail   string          `json:"detail,omitempty"`
	Syscalls json.RawMessage `json:"syscalls,omitempty"`
}

// ProbeControl is one row of the probe's verdict: what was attempted from
// inside, what the kernel answered, which layer answered, what the host's
// cgroup counters showed meanwhile, and whether the control held.
type ProbeControl struct {
	Name     string `json:"name"`
	Attempt  string `json:"attempt"`
	Observed string `json:"observed"`
	Layer    string `json:"layer"`
	Evidence string `json:"host_evidence,omitempty"`
	Pass     bool   `json:"pass"`
	// Detail is the probe's own explanation, for a row that failed.
	Detail   string          `json:"detail,omitempty"`
	Syscalls json.RawMessage `json:"syscalls,omitempty"`
}

// ProbeReport is the outcome of one `bulkhead probe`.
type ProbeReport struct {
	ID      string `json:"id"`
	Profile string `json:"profile"`
	Mode    string `json:"mode"`
	Backend string `json:"backend"`
	// Finished says the probe printed its done line.
	Finished bool           `json:"finished"`
	Controls []ProbeControl `json:"controls"`
	// Verification is what create verified from the host before the probe
	// started (runtime.Verify).
	Verification []Check `json:"verification,omitempty"`
	Pass         bool    `json:"pass"`
	Error        string  `json:"error,omitempty"`
}

// Failed lists the names of the controls that did not hold.
func (r *ProbeReport) Failed() []string {
	var out []string
	for _, c := range r.Controls {
		if !c.Pass {
			out = append(out, c.Name)
		}
	}
	return out
}

// probeSample is the host's reading of the cgroup counters when one line
// arrived: Before is the reading at the previous line, so After-Before is
// what that control's attempt did (controls run one after another, and each
// ends its children before printing).
type probeSample struct {
	Before, After cgroups.Events
	OK            bool // both readings succeeded
}

// Host-side layers.
const (
	layerPidsCgroup   = "pids cgroup"
	layerMemoryCgroup = "memory cgroup"
	layerCPUCgroup    = "cpu cgroup"
	layerMemoryGVisor = "memory cgroup (host OOM killer ends the whole sandbox)"
)

// judgeProbe turns the probe's lines and the host's counter samples into
// the report's rows. gvisor relaxes what only gVisor answers differently
// (the probe itself was told with -gvisor); the verdict for cpu, pids and
// memory always needs host evidence.
// hostFolderUnchanged tells whether the host folder behind /workspace is as
// the probe's bundle made it; for a copy-on-write workspace that is the
// evidence that the sandbox's write never reached the host.
func judgeProbe(lines map[string]ProbeLine, samples map[string]probeSample, limits *cgroups.Limits, gvisor, hostFolderUnchanged bool) []ProbeControl {
	var rows []ProbeControl
	for _, name := range ProbeControls {
		l, ok := lines[name]
		row := ProbeControl{Name: name, Attempt: l.Attempt, Observed: l.Observed, Layer: l.Layer, Syscalls: l.Syscalls}
		if !ok {
			row.Observed, row.Layer = "no line", "none"
			if name == "memory" && gvisor {
				row.Attempt = "child touches memory past the limit (after the done line)"
				row.Observed = "sandbox ended"
			}
		}
		row.Pass = ok && l.Pass && !l.Skipped
		s, sampled := samples[name]
		switch name {
		case "workspace":
			judgeWorkspace(&row, l, ok, hostFolderUnchanged)
		case "pids":
			judgePids(&row, l, s, sampled, limits, gvisor)
		case "memory":
			judgeMemory(&row, l, s, sampled, limits, gvisor)
		case "cpu":
			judgeCPU(&row, l, s, sampled, limits, gvisor)
		}
		if !row.Pass && ok {
			row.Detail = l.Detail
		}
		rows = append(rows, row)
	}
	return rows
}

// judgeWorkspace: EROFS inside proves a read-only bind; a write that went
// through holds only if the host folder is unchanged (copy-on-write).
func judgeWorkspace(row *ProbeControl, l ProbeLine, ok, hostFolderUnchanged bool) {
	if !ok || l.Observed != "written" {
		return
	}
	row.Pass = hostFolderUnchanged
	row.Layer = "copy-on-write workspace"
	row.Evidence = "host folder unchanged"
	if !hostFolderUnchanged {
		row.Layer = "none"
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
func judgePids(row *ProbeControl, l ProbeLine, s probeSample, sampled bool, limits *cgroups.Limits, gvisor bool) {
	if !sampled || !s.OK {
		row.Evidence = "no cgroup reading"
		row.Pass = false
		return
	}
	grew := s.After.PidsMax - s.Before.PidsMax
	row.Evidence = fmt.Sprintf("pids.events max +%d%s", grew, limitText("pids.max", limitOf(limits, "pids"), limits != nil))
	switch {
	case grew > 0 && l.Observed == "EAGAIN":
		row.Layer, row.Pass = layerPidsCgroup, true
	case gvisor && l.Pass && !l.Skipped && l.Observed == "EAGAIN":
		row.Pass = true // the layer is the probe's: gVisor's RLIMIT_NPROC
	default:
		row.Pass = false
	}
}

// judgeMemory: on runc the child's SIGKILL must come with memory oom_kill
// (or the failure counter) growing; under gVisor the attempt runs after
// the done line, the host OOM killer ends the sandbox, and oom_kill decides.
// layerMemoryGVisorSentry: under load gVisor sometimes ends the sandbox
// before the host's OOM killer counts a kill.
const layerMemoryGVisorSentry = "gVisor (Sentry): sandbox ended at the memory limit"

func judgeMemory(row *ProbeControl, l ProbeLine, s probeSample, sampled bool, limits *cgroups.Limits, gvisor bool) {
	if !sampled || !s.OK {
		row.Evidence = "no cgroup reading"
		row.Pass = false
		return
	}
	oom := s.After.OOMKills - s.Before.OOMKills
	fail := s.After.MemoryFailcnt - s.Before.MemoryFailcnt
	row.Evidence = fmt.Sprintf("memory oom_kill +%d, failcnt +%d%s", oom, fail, limitText("limit", limitOf(limits, "memory"), limits != nil))
	switch {
	case gvisor && oom > 0:
		row.Layer, row.Pass = layerMemoryGVisor, true
	case gvisor && l.Control == "":
		// The sandbox ended during the allocation without a host OOM kill
		// being counted: gVisor's own memory accounting (it sizes itself
		// to the cgroup limit verified at create) ended it first. The job
		// still could not take more than the limit.
		row.Layer, row.Pass = layerMemoryGVisorSentry, true
	case l.Observed == "SIGKILL" && l.Pass && (oom > 0 || fail > 0):
		row.Layer, row.Pass = layerMemoryCgroup, true
	default:
		row.Pass = false
	}
}

// judgeCPU: cpu.stat nr_throttled must grow while the probe spins; on runc
// the probe's own CPU/wall ratio must hold too, under gVisor it is not
// judged (gVisor counts host-throttled time as CPU time).
func judgeCPU(row *ProbeControl, l ProbeLine, s probeSample, sampled bool, limits *cgroups.Limits, gvisor bool) {
	if !sampled || !s.OK {
		row.Evidence = "no cgroup reading"
		row.Pass = false
		return
	}
	grew := s.After.NrThrottled - s.Before.NrThrottled
	quota := ""
	if limits != nil {
		quota = fmt.Sprintf(" (quota %s/%s)", cgroups.String(limits.CPUQuota), cgroups.String(limits.CPUPeriod))
	}
	row.Evidence = fmt.Sprintf("cpu.stat nr_throttled +%d, throttled %s%s", grew, (s.After.ThrottledTime - s.Before.ThrottledTime).Round(time.Millisecond).String(), quota)
	contended := !gvisor && limits != nil && limits.CPUQuota > 0 && l.Value != nil && *l.Value < contendedRatio
	switch {
	case grew == 0 && contended && l.Pass:
		// The spin never got the quota's worth of CPU (other work on
		// the host), so the quota had nothing to throttle: the job still
		// took no more than its share, and the quota itself was
		// verified at create.
		row.Layer, row.Pass = layerCPUCgroup+" (quota not reached: host busy)", true
		row.Evidence += "; the spin got less CPU than the quota"
	case grew == 0:
		row.Pass = false
	case gvisor:
		row.Layer, row.Pass = layerCPUCgroup, true
	default:
		row.Pass = l.Pass && !l.Skipped
		if row.Pass {
			row.Layer = layerCPUCgroup
		}
	}
}

// contendedRatio: a CPU/wall ratio below it means the probe's spin got
// less CPU than a 1-CPU quota would allow, so the quota could not bite.
const contendedRatio = 0.95

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
func (r *ProbeReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the table: one row per control, then the verdict.
func (r *ProbeReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "bulkhead probe: profile %s (%s) on %s, container %s\n", r.Profile, r.Mode, r.Backend, r.ID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTROL\tATTEMPT\tOBSERVED\tLAYER\tHOST EVIDENCE\tRESULT")
	for _, c := range r.Controls {
		verdict := "PASS"
		if !c.Pass {
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
		if !c.Pass && c.Detail != "" {
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
	} else {
		fmt.Fprintf(w, "FAILED: %s\n", strings.Join(r.Failed(), ", "))
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
