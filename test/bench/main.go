// Command bench compares `bulkhead run` with the plain backend's `run` of
// the same bundle, interleaved in one run so both see the same machine,
// and prints min, median, max and the ratio of the medians.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"bulkhead.dev/bulkhead/test/bundle"
)

func main() {
	bin := flag.String("bin", "bin", "directory with the bulkhead binary")
	n := flag.Int("n", 30, "iterations per runtime")
	only := flag.String("only", "", "run only this part: runtime, engine, workspace, egress or jobs")
	egressN := flag.Int("egress-n", 5, "iterations of the 100 MiB download per path (through the broker, direct)")
	jobsN := flag.Int("jobs-n", 3, "iterations per real job and runtime (go test runs once: it takes about a minute cold)")
	flag.Parse()
	if err := run(*bin, *n, *jobsN, *egressN, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin string, n, jobsN, egressN int, only string) error {
	dir, err := os.MkdirTemp("", "bulkhead-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bulkhead, err := filepath.Abs(filepath.Join(bin, "bulkhead"))
	if err != nil {
		return err
	}
	if only == "" || only == "runtime" {
		if err := benchRuntimes(bulkhead, dir, n); err != nil {
			return err
		}
	}
	if only == "" || only == "engine" {
		if err := benchEnginePath(bulkhead, dir, n); err != nil {
			return err
		}
		if err := benchConcurrent(bulkhead, dir, max(n/10, 3)); err != nil {
			return err
		}
		if err := benchDocker(bulkhead, dir, max(n/3, 10)); err != nil {
			return err
		}
	}
	if only == "" || only == "workspace" {
		if err := benchWorkspace(bulkhead, dir, n); err != nil {
			return err
		}
	}
	if only == "" || only == "egress" {
		if err := benchEgress(bulkhead, dir, egressN); err != nil {
			return err
		}
	}
	if only == "" || only == "jobs" {
		return benchJobs(bulkhead, dir, jobsN)
	}
	return nil
}

// benchRuntimes compares bulkhead run with the plain backends' run.
func benchRuntimes(bulkhead, dir string, n int) error {
	fmt.Printf("bulkhead run vs plain run of a busybox bundle running `true`, %d iterations each, interleaved\n", n)
	fmt.Printf("%-8s %-16s %9s %9s %9s\n", "backend", "runtime", "min", "median", "max")
	for _, backend := range []string{"runc", "runsc"} {
		plain, err := exec.LookPath(backend)
		if err != nil {
			fmt.Printf("%-8s not installed, skipped\n", backend)
			continue
		}
		iterations := n
		if backend == "runsc" {
			iterations = max(n/3, 10) // gVisor starts take seconds under ptrace; fewer keep make bench short
		}
		var plainArgs []string
		if backend == "runsc" {
			plainArgs = []string{"--platform=ptrace", "--network=none"}
		}
		ours := filepath.Join(dir, backend+"-bulkhead")
		theirs := filepath.Join(dir, backend+"-plain")
		for _, b := range []string{ours, theirs} {
			if err := bundle.Make(b, []string{"true"}); err != nil {
				return err
			}
		}
		// The spec bulkhead hands over, run by the plain backend: what the
		// boundary itself costs the backend (runc compiles the seccomp
		// filter), apart from bulkhead's own work.
		hardened := filepath.Join(dir, backend+"-hardened")
		if err := handedBundle(bulkhead, filepath.Join(dir, "root"), backend, ours, hardened); err != nil {
			return err
		}
		var tb, tp, th []time.Duration
		for i := 0; i < iterations; i++ {
			id := fmt.Sprintf("bench-%s-%d", backend, i)
			d, err := timed(bulkhead, "--root", filepath.Join(dir, "root"), "--backend", backend, "run", "--bundle", ours, id)
			if err != nil {
				return err
			}
			tb = append(tb, d)
			d, err = timed(plain, append(plainArgs, "--root", filepath.Join(dir, "plain-"+backend), "run", "--bundle", theirs, id)...)
			if err != nil {
				return err
			}
			tp = append(tp, d)
			if backend == "runc" {
				d, err = timed(plain, "--root", filepath.Join(dir, "hardened-"+backend), "run", "--bundle", hardened, id)
				if err != nil {
					return err
				}
				th = append(th, d)
			}
		}
		mb, mp := stats(backend, "bulkhead", tb), stats(backend, backend, tp)
		fmt.Printf("%-8s median ratio bulkhead/%s: %.2f\n", backend, backend, float64(mb)/float64(mp))
		if len(th) > 0 {
			mh := stats(backend, "hardened", th)
			fmt.Printf("%-8s median ratio bulkhead/%s with the same hardened spec: %.2f\n", backend, backend, float64(mb)/float64(mh))
		}
	}
	return nil
}

// handedBundle makes a bundle at dst whose config.json is the spec
// bulkhead hands the backend for src: read from bulkhead's own bundle of
// a created container (the caller's config.json is never rewritten), with
// the root at dst's own rootfs instead of the container's pin.
func handedBundle(bulkhead, root, backend, src, dst string) error {
	id := "bench-" + backend + "-handed"
	// Not timed(): the created init would hold its output pipe open.
	create := exec.Command(bulkhead, "--root", root, "--backend", backend, "create", "--bundle", src, id)
	if err := create.Run(); err != nil {
		return fmt.Errorf("%v: %w", create.Args, err)
	}
	s, err := bundle.Read(filepath.Join(root, "bulkhead", id, "bundle"))
	if _, derr := timed(bulkhead, "--root", root, "delete", "--force", id); err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	if err := bundle.Rootfs(filepath.Join(dst, "rootfs")); err != nil {
		return err
	}
	s.Root.Path = "rootfs"
	return bundle.Write(dst, s)
}

func timed(name string, args ...string) (time.Duration, error) {
	start := time.Now()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader("") // not /dev/null, which runsc would chown
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s %v: %v\n%s", name, args, err, out)
	}
	return d, nil
}

func stats(backend, label string, ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	med := ds[len(ds)/2]
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
	fmt.Printf("%-8s %-16s %9s %9s %9s\n", backend, label, ms(ds[0]), ms(med), ms(ds[len(ds)-1]))
	return med
}
