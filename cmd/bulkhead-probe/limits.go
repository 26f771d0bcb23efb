package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

const (
	maxChildren   = 200              // the fewest the pids attempt forks at most (childrenCeiling)
	sleeperLife   = 90 * time.Second // a sleeper outlives no pids attempt (pidsCap)
	memStep       = 16 << 20
	memCeiling    = 1 << 30 // the least the memory attempt touches (memoryCeiling)
	oomScoreWorst = "1000"
)

// childEnv keeps re-executed children small: one P means fewer runtime
// threads, and each thread counts against pids.max like a process does.
func childEnv() []string {
	return append(os.Environ(), "GOMAXPROCS=1", "GOGC=off")
}

// preferOOM makes this process the OOM killer's first choice (raising
// oom_score_adj needs no privilege), so the memory cgroup kills a child
// rather than the probe that has to report.
func preferOOM() {
	os.WriteFile("/proc/self/oom_score_adj", []byte(oomScoreWorst), 0)
}

// warmThreads makes the Go runtime create n OS threads now and park them.
// At the pids limit a new runtime thread fails with EAGAIN and Go aborts
// ("failed to create new OS thread"), so the process that forks up to the
// limit keeps idle threads in hand beforehand.
func warmThreads(n int) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			runtime.LockOSThread()
			wg.Done()
			<-release
			runtime.UnlockOSThread() // back to the idle pool, not exited
		}()
	}
	wg.Wait()
	close(release)
}

// pidsReport is what the -child-pids worker prints.
type pidsReport struct {
	Started int    `json:"started"`
	Errno   string `json:"errno"`
	Err     string `json:"err,omitempty"`
}

// checkPids: fork past the limit. The forking happens in a worker child
// (-child-pids) so that if the Go runtime of the forking process is the
// one that hits the limit (a thread, not a fork), it is the worker that
// aborts, not the probe. Each fork re-executes the probe as a sleeper:
// Go cannot fork() without exec.
//
// Under gVisor (-gvisor) the sandbox's processes are the Sentry's tasks:
// with the ptrace platform each is backed by host threads, and reaching
// the host pids.max makes the Sentry panic and the whole sandbox die. The
// loop runs there only when RLIMIT_NPROC is finite (bulkhead sets it to the
// profile's limit for runsc, and the host pids.max above it): gVisor's
// kernel then answers EAGAIN per sandbox.
func checkPids(env *probeEnv) Result {
	children := childrenCeiling(env.policy.pidsLimit)
	r := Result{Attempt: fmt.Sprintf("fork/exec up to %d sleeping children until EAGAIN", children)}
	nproc, nprocSet := nprocLimit()
	if env.gvisor && !env.forceLimits && !nprocSet {
		return notTriedInGVisor(r.Attempt, "RLIMIT_NPROC is unlimited: with the ptrace platform every sandboxed process is backed by host threads, "+
			"and when they reach the host pids.max the sentry panics (\"error initializing first thread: resource temporarily unavailable\") "+
			"and the whole sandbox dies, so the probe would not report; the host's pids.events is the evidence here")
	}
	warmThreads(8)
	cmd := exec.Command("/proc/self/exe", "-child-pids", strconv.Itoa(children))
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := runWhileProgressing(cmd, pidsStall, pidsCap)
	var rep pidsReport
	jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &rep)
	switch {
	case jerr == nil:
	case strings.Contains(stderr.String(), "errno=11"):
		// The worker's runtime could not create a thread: the pids limit
		// answered EAGAIN to clone before fork did.
		rep = pidsReport{Started: -1, Errno: "EAGAIN", Err: "worker runtime: failed to create new OS thread (errno=11)"}
	default:
		r.Observed = errName(err)
		r.Layer = protocol.LayerNone
		r.Detail = "worker gave no report: " + firstLine(stderr.String())
		return r
	}
	r.Observed = rep.Errno
	if rep.Started >= 0 {
		r.Value = num(float64(rep.Started))
	}
	r.Detail = fmt.Sprintf("%d children started", rep.Started)
	if rep.Err != "" {
		r.Detail += "; " + rep.Err
	}
	switch {
	case rep.Errno == "EAGAIN" && env.gvisor:
		r.Layer = LayerGVisorNproc
		r.Pass = true
		r.Detail += fmt.Sprintf("; RLIMIT_NPROC %d inside; the host's pids.events tells whether the host pids cgroup answered instead", nproc)
	case rep.Errno == "EAGAIN":
		r.Layer = protocol.LayerPids
		r.Pass = true
	case rep.Errno == "none":
		r.Layer = protocol.LayerNone
		r.Detail += ": no limit reached"
	default:
		r.Layer = protocol.LayerNone
	}
	return r
}

// The pids worker is killed when it starts no child for pidsStall, or at
// pidsCap: a fork that never returns must not hold the probe, but a slow
// one is no failure (under gVisor, on a loaded host, 256 re-executions
// took more than seven seconds).
const (
	pidsStall = 15 * time.Second
	pidsCap   = 75 * time.Second
)

// runWhileProgressing runs cmd, which writes a byte to descriptor 3 for
// each step it makes, and kills it once no step came for stall or at most
// after limit.
func runWhileProgressing(cmd *exec.Cmd, stall, limit time.Duration) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return err
	}
	steps := make(chan struct{})
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := r.Read(buf); err != nil {
				close(steps)
				return
			}
			steps <- struct{}{}
		}
	}()
	end := time.After(limit)
	idle := time.NewTimer(stall)
	defer idle.Stop()
	for {
		select {
		case _, ok := <-steps:
			if !ok {
				return cmd.Wait()
			}
			idle.Reset(stall)
			continue
		case <-idle.C:
		case <-end:
		}
		cmd.Process.Kill()
		for range steps {
		}
		return cmd.Wait()
	}
}

// childPidsMain forks up to n sleepers, reports, then kills and reaps them;
// it writes a byte to descriptor 3 (runWhileProgressing) for each one.
func childPidsMain(n int, w io.Writer) int {
	// Not the sleepers': the pipe ends when the worker is done.
	syscall.CloseOnExec(3)
	progress := os.NewFile(3, "progress")
	warmThreads(4)
	var kids []*exec.Cmd
	rep := pidsReport{Errno: "none"}
	for i := 0; i < n; i++ {
		c := exec.Command("/proc/self/exe", "-child-sleep")
		c.Env = childEnv()
		// If the worker dies, so do its children.
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			rep.Errno = errName(err)
			if _, ok := errnoOf(err); !ok {
				rep.Err = err.Error()
			}
			break
		}
		kids = append(kids, c)
		if progress != nil {
			progress.Write([]byte{1})
		}
	}
	if progress != nil {
		progress.Close()
	}
	rep.Started = len(kids)
	// Report before cleaning up: the report is what matters if cleanup
	// gets us killed.
	data, _ := json.Marshal(rep)
	w.Write(append(data, '\n'))
	for _, c := range kids {
		c.Process.Kill()
	}
	for _, c := range kids {
		c.Wait()
	}
	return 0
}

// childSleepMain is one forked child: it volunteers for the OOM killer and
// sleeps until killed (or at most sleeperLife).
func childSleepMain() int {
	preferOOM()
	time.Sleep(sleeperLife)
	return 0
}

// checkMemory: a child touches memory in 16 MiB steps past the profile's
// limit (memoryCeiling); the memory cgroup (no swap) must SIGKILL it
// before the limit. The child raises its own oom_score_adj so the kernel
// picks it, and the probe survives.
func checkMemory(env *probeEnv) Result {
	limit := env.policy.memoryLimit
	ceiling := memoryCeiling(limit)
	r := Result{Attempt: fmt.Sprintf("child touches memory in %d MiB steps up to %d MiB", memStep>>20, ceiling>>20)}
	if env.gvisor && !env.forceLimits && !env.memoryAfterDone {
		return notTriedInGVisor(r.Attempt, "the host memory cgroup sees only the sentry: past the limit the host OOM killer kills the "+
			"whole sandbox (runsc exits 137), not the child, so the probe would not report; the host's memory oom_kill is the evidence here. "+
			"MemTotal inside: "+memTotal())
	}
	ctx, cancel := context.WithTimeout(context.Background(), memDeadline(ceiling, env.memoryAfterDone))
	defer cancel()
	cmd := exec.CommandContext(ctx, "/proc/self/exe", "-child-mem", "-memory-limit", strconv.FormatInt(limit, 10))
	cmd.Env = childEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.Observed, r.Layer = errName(err), protocol.LayerNone
		return r
	}
	if err := cmd.Start(); err != nil {
		r.Observed, r.Layer = errName(err), protocol.LayerNone
		return r
	}
	var last int64
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, err := strconv.ParseInt(strings.TrimPrefix(sc.Text(), "touched "), 10, 64); err == nil {
			last = n
		}
	}
	err = cmd.Wait()
	r.Value = num(float64(last))
	r.Detail = fmt.Sprintf("child touched %d MiB before it ended", last>>20)
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.Observed, r.Layer = "timeout", protocol.LayerNone
		r.Detail += "; killed by the probe's own deadline"
	case err == nil:
		r.Observed = "exit 0"
		judgeMemoryEnd(&r, false, 0, last, limit, ceiling)
	case errors.As(err, &ee):
		ws, _ := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			r.Observed = unix.SignalName(ws.Signal())
			judgeMemoryEnd(&r, true, ws.Signal(), last, limit, ceiling)
		} else {
			r.Observed, r.Layer = fmt.Sprintf("exit %d", ws.ExitStatus()), protocol.LayerNone
			r.Detail += ": " + firstLine(stderr.String())
		}
	default:
		r.Observed, r.Layer = errName(err), protocol.LayerNone
	}
	return r
}

// memDeadline bounds the child's allocation of ceiling bytes. After the
// done line (gVisor): 9 s per memCeiling, since gVisor's ptrace platform
// touches memory slowly (measured about 375 MiB/s on 2 cores, so
// memMaxCeiling takes 11 s), but no longer than memDeadlineCap, which
// stays below the host's wait after the done line (afterDoneWait, 30 s).
// In line (runc): a second per memInlineRate, which only a child no limit
// stops waits out: a loaded 2-core host touched 1,344 MiB in the 15 s the
// first bound gave a 1.5 GiB limit (90 MiB/s), and a timeout is no
// evidence of the limit.
func memDeadline(ceiling int64, afterDone bool) time.Duration {
	if !afterDone {
		return max(memDeadlineBase, time.Duration(ceiling/memInlineRate)*time.Second)
	}
	d := time.Duration(float64(memDeadlineBase) * float64(ceiling) / memCeiling)
	return min(max(d, memDeadlineBase), memDeadlineCap)
}

const (
	memDeadlineBase = 9 * time.Second
	memDeadlineCap  = 25 * time.Second
	memInlineRate   = 40 << 20 // bytes per second
)

// judgeMemoryEnd judges how the child that touched last bytes ended
// (signaled with sig, or exited by itself after reaching ceiling) against
// the profile's limit. Only a SIGKILL at or below the limit is the
// limit's evidence: a child killed past it was stopped by something else
// (a larger limit, the host's OOM killer), and one that finished its loop
// met no limit at all.
func judgeMemoryEnd(r *Result, signaled bool, sig syscall.Signal, last, limit, ceiling int64) {
	r.Layer = protocol.LayerNone
	switch {
	case !signaled:
		r.Detail += ": no memory limit reached"
		if limit > 0 && ceiling <= limit {
			r.Detail += fmt.Sprintf(" (the profile's limit of %s is above the most the probe touches, %s)", mib(limit), mib(ceiling))
		}
	case sig != syscall.SIGKILL:
	case limit > 0 && last > limit:
		r.Detail += fmt.Sprintf(": killed past the profile's limit of %s, so not by that limit", mib(limit))
	default:
		r.Layer, r.Pass = protocol.LayerMemory, true
	}
}

// childMemMain allocates and touches memory up to ceiling bytes, printing
// progress after each step so the parent knows how far it got before the
// kill.
func childMemMain(ceiling int64, w io.Writer) int {
	preferOOM()
	debug.SetGCPercent(-1)
	var keep [][]byte
	for total := int64(0); total < ceiling; {
		b := make([]byte, memStep)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
		total += memStep
		fmt.Fprintf(w, "touched %d\n", total)
	}
	runtime.KeepAlive(keep)
	return 0
}

// notTriedInGVisor is the result of a limit control the probe does not
// push under gVisor: not evidence of the limit, so not a pass, but not a
// failure the probe observed either — the host's cgroup counters decide.
// -force-limits runs them anyway; -memory-after-done runs memory last.
func notTriedInGVisor(attempt, why string) Result {
	return Result{Attempt: attempt, Observed: "not tried (gVisor)", Layer: protocol.LayerNone, Skipped: true, Detail: why}
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return errName(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
