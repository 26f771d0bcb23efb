package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/bundle"
)

// verbs are the calls an engine makes for one container, in order.
var verbs = []string{"create", "start", "delete"}

// cost is one call's wall time, the CPU it and every process it waited
// for used, and the largest resident set among them.
type cost struct {
	wall, cpu time.Duration
	maxRSS    int64 // KiB
}

// call runs one verb with stdin on an empty pipe and output where it may
// go: a created init keeps the descriptors it was given, and an output
// pipe would hold the caller until the container exits. Plain runsc gets
// a file beside the log, not the host's /dev/null (os/exec's default),
// which it would chown to the sandbox's user; bulkhead refuses a file it
// does not own for the container and guards /dev/null itself. A
// failure's reason is in the --log file.
func call(log, name string, args ...string) (cost, error) {
	where := log + ".stdio"
	if filepath.Base(name) == "bulkhead" {
		where = os.DevNull
	}
	out, err := os.OpenFile(where, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return cost{}, err
	}
	defer out.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), out, out
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		tail, _ := os.ReadFile(log)
		return cost{}, fmt.Errorf("%s %v: %v\n%s", name, args, err, lastLines(string(tail), 5))
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return cost{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), maxRSS: ru.Maxrss}, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// lifecycle is one container's create, start (of `true`), wait until it
// stopped (not timed) and delete, through one runtime's command line.
type lifecycle struct {
	bin    string
	global []string // --root, --log and the backend's own flags
	log    string
	bundle string
	// bundles, when set, are a bundle for each container of a fleet.
	bundles []string
	// awaitInit waits for the init's exit on a pidfd, as an engine's shim
	// learns of it, rather than by asking the runtime's `state` every few
	// milliseconds: in a fleet those calls were a share of the CPU the
	// containers compete for, and no engine makes them. runc only: a
	// runsc pid file names the sandbox, which outlives the container.
	awaitInit bool
}

func (l lifecycle) run(id string) ([]cost, error) {
	var cs []cost
	for _, verb := range verbs {
		if verb == "delete" {
			if err := l.waitStopped(id); err != nil {
				return nil, err
			}
		}
		args := append(append([]string{}, l.global...), verb)
		if verb == "create" {
			args = append(args, "--bundle", l.bundle)
			if l.awaitInit {
				args = append(args, "--pid-file", l.pidFile(id))
			}
		}
		c, err := call(l.log, l.bin, append(args, id)...)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func (l lifecycle) pidFile(id string) string { return l.log + "." + id + ".pid" }

func (l lifecycle) waitStopped(id string) error {
	if l.awaitInit {
		return l.awaitInitExit(id)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := exec.Command(l.bin, append(append([]string{}, l.global...), "state", id)...).Output()
		if err == nil && strings.Contains(string(out), `"stopped"`) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not stop in 30 s: %v %s", l.bin, id, err, out)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// awaitInitExit waits until the init named by the create's pid file has
// exited; an init gone before the pidfd was opened has exited too.
func (l lifecycle) awaitInitExit(id string) error {
	data, err := os.ReadFile(l.pidFile(id))
	if err != nil {
		return err
	}
	os.Remove(l.pidFile(id))
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("%s: pid file of %s: %w", l.bin, id, err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pidfd of %s's init %d: %w", id, pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 30_000)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("wait for %s's init %d: %w", id, pid, err)
		case n == 0:
			return fmt.Errorf("%s: the init of %s did not exit in 30 s", l.bin, id)
		}
		return nil
	}
}

// benchEnginePath times what an engine's shim does per container (create,
// start, delete: three calls), bulkhead against the plain backend given
// the spec bulkhead hands it (runsc: the same bundle), interleaved, per verb and summed, in wall
// time and in CPU time (the machine's noise moves the first more).
func benchEnginePath(bulkhead, dir string, n int) error {
	fmt.Printf("\nengine path: create, start, delete of a busybox `true`, interleaved; medians\n")
	for _, backend := range []string{"runc", "runsc"} {
		plain, err := exec.LookPath(backend)
		if err != nil {
			fmt.Printf("%-8s not installed, skipped\n", backend)
			continue
		}
		iterations := n
		if backend == "runsc" {
			iterations = max(n/3, 10)
		}
		ours, theirs := filepath.Join(dir, "ep-"+backend), filepath.Join(dir, "ep-"+backend+"-handed")
		if err := bundle.Make(ours, []string{"true"}); err != nil {
			return err
		}
		var plainFlags []string
		if backend == "runsc" {
			// The spec bulkhead hands runsc binds files of the container's
			// own state (the seccomp program), gone with it: plain runsc
			// runs the caller's bundle, as `run` is compared above.
			plainFlags = []string{"--platform=ptrace", "--network=none"}
			theirs = ours
		} else if err := handedBundle(bulkhead, filepath.Join(dir, "ep-root"), backend, ours, theirs); err != nil {
			return err
		}
		var floor string
		var floors []cost
		if backend == "runc" {
			if floor, err = buildFloor(dir); err != nil {
				return err
			}
		}
		sides := []lifecycle{
			{bin: bulkhead, log: filepath.Join(dir, "ep-bulkhead.log"), bundle: ours, awaitInit: backend == "runc"},
			{bin: plain, log: filepath.Join(dir, "ep-plain.log"), bundle: theirs, awaitInit: backend == "runc"},
		}
		sides[0].global = []string{"--root", filepath.Join(dir, "ep-root"), "--log", sides[0].log, "--backend", backend}
		sides[1].global = append([]string{"--root", filepath.Join(dir, "ep-plain-"+backend), "--log", sides[1].log}, plainFlags...)
		// per[side][verb] and the sums
		per := [2][3][]cost{}
		sum := [2][]cost{}
		for i := 0; i < iterations; i++ {
			for s, side := range sides {
				cs, err := side.run(fmt.Sprintf("ep-%s-%d", backend, i))
				if err != nil {
					return err
				}
				var total cost
				for v, c := range cs {
					per[s][v] = append(per[s][v], c)
					total.wall += c.wall
					total.cpu += c.cpu
					total.maxRSS = max(total.maxRSS, c.maxRSS)
				}
				sum[s] = append(sum[s], total)
			}
			if floor != "" {
				c, err := call(sides[1].log, floor)
				if err != nil {
					return err
				}
				floors = append(floors, c)
			}
		}
		fmt.Printf("%-8s %-8s %12s %12s %7s %12s %12s %7s\n", backend, "verb", "bulkhead", backend, "ratio", "bulkhead cpu", backend+" cpu", "ratio")
		row := func(label string, b, p []cost) {
			bw, pw := medianOf(b, func(c cost) int64 { return int64(c.wall) }), medianOf(p, func(c cost) int64 { return int64(c.wall) })
			bc, pc := medianOf(b, func(c cost) int64 { return int64(c.cpu) }), medianOf(p, func(c cost) int64 { return int64(c.cpu) })
			fmt.Printf("%-8s %-8s %12s %12s %7.2f %12s %12s %7.2f\n", backend, label,
				msOf(bw), msOf(pw), float64(bw)/float64(pw), msOf(bc), msOf(pc), float64(bc)/float64(pc))
		}
		for v, verb := range verbs {
			row(verb, per[0][v], per[1][v])
		}
		row("sum", sum[0], sum[1])
		rb := medianOf(per[0][0], func(c cost) int64 { return c.maxRSS })
		rp := medianOf(per[1][0], func(c cost) int64 { return c.maxRSS })
		fmt.Printf("%-8s peak RSS of a create (the largest process it waited for): bulkhead %.1f MiB, %s %.1f MiB\n",
			backend, float64(rb)/1024, backend, float64(rp)/1024)
		if floor != "" {
			fc := medianOf(floors, func(c cost) int64 { return int64(c.cpu) })
			pc := medianOf(sum[1], func(c cost) int64 { return int64(c.cpu) })
			fmt.Printf("%-8s floor of a runtime that execs runc: one Go process that does nothing costs %s of CPU; "+
				"runc's engine path with it would be %.2f of runc's\n", backend, msOf(fc), float64(pc+fc)/float64(pc))
		}
	}
	return nil
}

// buildFloor builds the program that does nothing, static as runc's
// callers' runtimes are, and says where it is.
func buildFloor(dir string) (string, error) {
	floor := filepath.Join(dir, "floor")
	build := exec.Command("go", "build", "-o", floor, "bulkhead.dev/bulkhead/test/bench/floor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the floor program: %v: %s", err, out)
	}
	return floor, nil
}

func medianOf(cs []cost, f func(cost) int64) int64 {
	vs := make([]int64, len(cs))
	for i, c := range cs {
		vs[i] = f(c)
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

func msOf(ns int64) string { return fmt.Sprintf("%.1fms", float64(ns)/1e6) }
