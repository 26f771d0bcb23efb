package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/engine"
)

// hardening is the README's hardened `docker run`, given to both runtimes
// so that runc is timed with the boundary bulkhead would force.
var hardening = []string{"--network", "none", "--read-only", "--user", "65534:65534", "--cap-drop", "ALL",
	"--security-opt", "no-new-privileges", "--memory", "256m", "--cpus", "1", "--pids-limit", "64",
	"--tmpfs", "/tmp:rw,noexec,nosuid,size=16m,mode=1777"}

// benchDocker times `docker run --rm` of a busybox `true` through a
// private dockerd (the harness's, as the tests start it) with
// --runtime=bulkhead and --runtime=runc, both with the hardening flags,
// interleaved, and prints the ratio of the medians.
func benchDocker(bulkhead, dir string, n int) error {
	d, err := engine.StartDocker(engine.DockerOptions{NoBridge: true, Runtimes: map[string]engine.Runtime{
		"bulkhead": {Path: bulkhead},
	}})
	if err != nil {
		return fmt.Errorf("docker bench: %w", err)
	}
	defer d.Close()
	rootfs := filepath.Join(dir, "docker-rootfs")
	if err := bundle.Rootfs(rootfs); err != nil {
		return err
	}
	defer os.RemoveAll(rootfs)
	if err := d.Import(rootfs, "bench-busybox"); err != nil {
		return err
	}
	runOnce := func(runtime string) (time.Duration, error) {
		args := append(append([]string{"run", "--rm", "--runtime=" + runtime}, hardening...), "bench-busybox", "true")
		return timedCmd(d.Cmd(args...))
	}
	for _, r := range []string{"bulkhead", "runc"} { // the first run of each warms dockerd and the image
		if _, err := runOnce(r); err != nil {
			return err
		}
	}
	var tb, tr []time.Duration
	for i := 0; i < n; i++ {
		db, err := runOnce("bulkhead")
		if err != nil {
			return err
		}
		dr, err := runOnce("runc")
		if err != nil {
			return err
		}
		tb, tr = append(tb, db), append(tr, dr)
	}
	fmt.Printf("\ndocker run --rm of a busybox `true`, the same hardening flags, %d runs each, interleaved\n", n)
	fmt.Printf("%-8s %-16s %9s %9s %9s\n", "engine", "runtime", "min", "median", "max")
	mb, mr := stats("docker", "bulkhead", tb), stats("docker", "runc", tr)
	fmt.Printf("%-8s median ratio bulkhead/runc: %.2f\n", "docker", float64(mb)/float64(mr))
	return nil
}
