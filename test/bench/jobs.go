package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/opencontainers/runc/libcontainer/specconv"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/jobimage"
)

// benchJobs times each real job of the tests profile inside bulkhead, on
// runc and on runsc, against the same job run directly on the host, cold
// each time (a sandbox starts with an empty home, so the host run gets an
// empty one too). What the boundary costs depends on the workload: a job
// that makes many system calls pays gVisor's ptrace platform on each.
func benchJobs(bulkhead, dir string, n int) error {
	rootfs := filepath.Join(dir, "job-rootfs")
	if err := jobimage.Rootfs(rootfs); err != nil {
		return err
	}
	fmt.Printf("\nreal jobs, profile tests: wall time inside bulkhead against the host, cold caches\n")
	fmt.Printf("%-8s %-16s %9s %9s %9s\n", "job", "runtime", "min", "median", "max")
	seq := 0
	for _, j := range jobimage.Jobs {
		if m := j.Missing(); m != "" {
			fmt.Printf("%-8s skipped: %s is not installed\n", j.Name, m)
			continue
		}
		iterations := n
		if j.Name == "go" {
			iterations = 1 // a cold go test compiles the standard library: about a minute on the host
		}
		times := map[string][]time.Duration{}
		for i := 0; i < iterations; i++ {
			for _, where := range []string{"host", "runc", "runsc"} {
				seq++
				run := filepath.Join(dir, fmt.Sprintf("job-%d", seq))
				d, err := timeJob(bulkhead, rootfs, run, where, j, seq)
				if err != nil {
					return fmt.Errorf("%s on %s: %w", j.Name, where, err)
				}
				times[where] = append(times[where], d)
				os.RemoveAll(run)
			}
		}
		host := stats(j.Name, "host", times["host"])
		for _, backend := range []string{"runc", "runsc"} {
			m := stats(j.Name, "bulkhead-"+backend, times[backend])
			fmt.Printf("%-8s median ratio bulkhead-%s/host: %.2f\n", j.Name, backend, float64(m)/float64(host))
		}
	}
	return nil
}

// timeJob runs one job in a fresh checkout under run/ and returns its
// wall time; a job that does not pass is an error.
func timeJob(bulkhead, rootfs, run, where string, j jobimage.Job, seq int) (time.Duration, error) {
	ws := filepath.Join(run, "checkout")
	if err := os.MkdirAll(run, 0o755); err != nil {
		return 0, err
	}
	uid := 65534
	if where == "host" {
		uid = 0
	}
	if err := jobimage.Checkout(j.Src, ws, uid, nil); err != nil {
		return 0, err
	}
	if where == "host" {
		home := filepath.Join(run, "home")
		if err := os.Mkdir(home, 0o700); err != nil {
			return 0, err
		}
		argv := jobimage.HostArgv(j.Args)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = filepath.Join(ws, j.Cwd), []string{jobimage.Path, "HOME=" + home}
		return timedCmd(cmd)
	}
	b := filepath.Join(run, "bundle")
	if err := os.MkdirAll(filepath.Join(b, "rootfs"), 0o755); err != nil {
		return 0, err
	}
	// root.path must lie inside the bundle: the shared image is bound there.
	if err := unix.Mount(rootfs, filepath.Join(b, "rootfs"), "", unix.MS_BIND, ""); err != nil {
		return 0, err
	}
	defer unix.Unmount(filepath.Join(b, "rootfs"), unix.MNT_DETACH)
	s := specconv.Example()
	s.Process.Terminal = false
	s.Process.Args = j.Args
	s.Process.Cwd = filepath.Join("/workspace", j.Cwd)
	s.Process.Env = []string{jobimage.Path}
	s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: ws, Options: []string{"rbind", "rw"}})
	s.Annotations = map[string]string{"bulkhead.dev/profile": "tests"}
	if where == "runsc" {
		s.Annotations["bulkhead.dev/backend"] = "runsc"
	}
	if err := bundle.Write(b, s); err != nil {
		return 0, err
	}
	cmd := exec.Command(bulkhead, "--root", filepath.Join(run, "root"), "run", "--bundle", b, fmt.Sprintf("bench-job-%s-%d", j.Name, seq))
	return timedCmd(cmd)
}

func timedCmd(cmd *exec.Cmd) (time.Duration, error) {
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%v: %v\n%s", cmd.Args, err, out)
	}
	return d, nil
}
