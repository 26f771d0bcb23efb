package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// workspaceFiles is the size of the checkout the workspace bench uses: a
// real repository's order of magnitude.
const workspaceFiles = 10_000

// workspaceJobs separate what a workspace costs every container (the id
// map, the overlay and its tmpfs, the keep on delete) from what it costs
// per file a job touches (overlayfs's first lookup of each name).
var workspaceJobs = []struct{ name, cmd string }{
	{"true", "true"},
	{"find", "find /workspace -type f | wc -l"}, // what a test runner or linter does first
}

// benchWorkspace times create-to-exit (`bulkhead run`) of jobs over a
// 10,000-file checkout owned by uid 1000, given as the copy-on-write
// workspace and as a read-only bind, interleaved, and prints the ratio
// of the medians.
func benchWorkspace(bulkhead, dir string, n int) error {
	src := filepath.Join(dir, "checkout")
	for i := 0; i < workspaceFiles; i++ {
		p := filepath.Join(src, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%03d.txt", i%100))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("line %d\n", i)), 0o644); err != nil {
			return err
		}
	}
	if out, err := exec.Command("chown", "-R", "1000:1000", src).CombinedOutput(); err != nil {
		return fmt.Errorf("chown: %v %s", err, out)
	}
	fmt.Printf("\nworkspace of %d files (uid 1000) vs read-only bind, create to exit\n", workspaceFiles)
	fmt.Printf("%-8s %-16s %9s %9s %9s\n", "backend", "job, mount", "min", "median", "max")
	for _, backend := range []string{"runc", "runsc"} {
		if _, err := exec.LookPath(backend); err != nil {
			fmt.Printf("%-8s not installed, skipped\n", backend)
			continue
		}
		iterations := n
		if backend == "runsc" {
			iterations = max(n/3, 10)
		}
		for _, job := range workspaceJobs {
			if err := benchWorkspaceJob(bulkhead, dir, src, backend, job.name, job.cmd, iterations); err != nil {
				return err
			}
		}
	}
	return benchOverlayFloor(dir, src, n)
}

func benchWorkspaceJob(bulkhead, dir, src, backend, name, cmd string, iterations int) error {
	args := map[string][]string{}
	bundleOf := func(mode string) string { return filepath.Join(dir, backend+"-"+name+"-"+mode) }
	// bulkhead never writes the caller's config.json, so every run reads
	// the same one.
	runMode := func(mode, id string) (time.Duration, error) {
		return timed(bulkhead, append(args[mode], id)...)
	}
	for _, mode := range []string{"overlay", "readonly"} {
		cfg := filepath.Join(dir, backend+"-"+mode+".toml")
		body := fmt.Sprintf("changes_dir = %q\naudit_log = %q\n[profiles.default]\nworkspace_mode = %q\n",
			filepath.Join(dir, "changes"), filepath.Join(dir, "audit.jsonl"), mode)
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			return err
		}
		b := bundleOf(mode)
		if err := bundle.Make(b, []string{"sh", "-c", cmd}, func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
		}); err != nil {
			return err
		}
		args[mode] = []string{"--config", cfg, "--root", filepath.Join(dir, "root-ws"), "--backend", backend, "run", "--bundle", b}
		if _, err := runMode(mode, "ws-warm-"+backend+"-"+name+"-"+mode); err != nil {
			return err
		}
	}
	var tw, tr []time.Duration
	for i := 0; i < iterations; i++ {
		d, err := runMode("overlay", fmt.Sprintf("ws-%s-%s-o%d", backend, name, i))
		if err != nil {
			return err
		}
		tw = append(tw, d)
		if d, err = runMode("readonly", fmt.Sprintf("ws-%s-%s-r%d", backend, name, i)); err != nil {
			return err
		}
		tr = append(tr, d)
	}
	mw, mr := stats(backend, name+", workspace", tw), stats(backend, name+", read-only", tr)
	fmt.Printf("%-8s median ratio workspace/read-only bind, job %q: %.2f\n", backend, cmd, float64(mw)/float64(mr))
	return nil
}
