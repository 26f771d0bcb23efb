package probe

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// Output is what the host saw of one probe run: the lines, the
// cgroup counters sampled as each arrived, and how the output ended.
type Output struct {
	lines   map[string]Line
	samples map[string]Sample
	// Finished: the done line came.
	Finished bool
	// ended: the container's stdout reached EOF, so every process in it
	// had exited. Under gVisor this is the evidence that the memory
	// attempt after done ended the sandbox; a read that stopped on a
	// deadline is not.
	ended bool
}

// sinceStart are the controls whose counters grow only from their own
// attempt in the container's fresh cgroup (pids.events max, oom_kill):
// judged from the start of the run, no lag of this reader behind the
// probe's output can move the attempt into the previous line's sample.
var sinceStart = map[string]bool{"pids": true, "memory": true}

// cpuPoll is how often the host reads cpu.stat while it waits for a line,
// to tell the cpu attempt under gVisor when the quota has bitten.
const cpuPoll = 100 * time.Millisecond

// Read reads the probe's lines until EOF, the done line (runc), or,
// under gVisor, afterDone past the done line (the memory attempt follows
// it), or ctx. events reads the container's cgroup counters. stopCPU, when
// set, is called (once for each line's wait, before the cpu line) as soon
// as the container's nr_throttled has grown by protocol.CPUBites since the last
// line: it tells a probe that cannot see the host's cgroup (gVisor) that
// its spin has shown the quota biting.
func Read(ctx context.Context, lines <-chan string, events func() (cgroups.Events, error), gvisor bool, afterDone time.Duration, stopCPU func()) Output {
	out := Output{lines: map[string]Line{}, samples: map[string]Sample{}}
	prev, prevErr := events()
	prevAt := time.Now()
	first, firstErr := prev, prevErr
	stopped := false // stopCPU was called since the last line
	take := func(raw string) {
		var l Line
		if err := json.Unmarshal([]byte(raw), &l); err != nil || l.Control == "" {
			logrus.Warnf("bulkhead: probe: not a probe line: %q", raw)
			return
		}
		now, err := events()
		at := time.Now()
		out.samples[l.Control] = Sample{Before: prev, After: now, OK: err == nil && prevErr == nil, Wall: at.Sub(prevAt)}
		if sinceStart[l.Control] {
			s := out.samples[l.Control]
			s.Before, s.OK = first, err == nil && firstErr == nil
			out.samples[l.Control] = s
		}
		prev, prevErr, prevAt = now, err, at
		out.lines[l.Control] = l
		stopped = false
	}
	var poll <-chan time.Time
	if stopCPU != nil {
		t := time.NewTicker(cpuPoll)
		defer t.Stop()
		poll = t.C
	}
	var after <-chan time.Time // set once done arrived and an attempt follows it
	for {
		select {
		case <-poll:
			if _, seen := out.lines["cpu"]; seen || stopped || prevErr != nil {
				continue
			}
			if now, err := events(); err == nil && now.NrThrottled-prev.NrThrottled >= protocol.CPUBites {
				stopped = true
				stopCPU()
			}
			continue
		case raw, ok := <-lines:
			if !ok {
				out.ended = true
				break
			}
			if strings.TrimSpace(raw) == protocol.Done {
				out.Finished = true
				if !gvisor {
					return out
				}
				t := time.NewTimer(afterDone)
				defer t.Stop()
				after = t.C
				continue
			}
			take(raw)
			continue
		case <-after:
		case <-ctx.Done():
		}
		break
	}
	if gvisor && out.Finished && out.ended {
		// The memory attempt after done: its line if the sandbox
		// survived, else the counters when the sandbox ended.
		if _, ok := out.samples["memory"]; !ok {
			now, err := events()
			out.samples["memory"] = Sample{Before: prev, After: now, OK: err == nil && prevErr == nil, Wall: time.Since(prevAt)}
		}
	}
	return out
}
