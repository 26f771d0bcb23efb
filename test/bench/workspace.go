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

// benchWorkspace times create-to-exit (`bulkhead run`) of one job over a
// 10,000-file checkout owned by uid 1000, given as the copy-on-write
// workspace (id-mapped lower layer, overlay, changes kept on delete) and
// as a read-only bind, interleaved, and prints the ratio of the medians.
func benchWorkspace(bulkhead, dir string, n int) (err error) {
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
	// The job reads the whole tree: what a test runner or linter does
	// first, and what both mounts can serve.
	job := "find /workspace -type f | wc -l"
	fmt.Printf("\nworkspace of %d files (uid 1000) vs read-only bind, job %q, create to exit\n", workspaceFiles, job)
	fmt.Printf("%-8s %-10s %9s %9s %9s\n", "backend", "mount", "min", "median", "max")
	for _, backend := range []string{"runc", "runsc"} {
		if _, err := exec.LookPath(backend); err != nil {
			fmt.Printf("%-8s not installed, skipped\n", backend)
			continue
		}
		iterations := n
		if backend == "runsc" {
			iterations = max(n/3, 10)
		}
		args := map[string][]string{}
		configs := map[string][]byte{}
		// bulkhead writes the rewritten spec back into the caller's
		// bundle (its workspace bind then names the overlay of that run):
		// every run starts from the caller's config.json.
		runMode := func(mode, id string) (time.Duration, error) {
			if err := os.WriteFile(filepath.Join(dir, backend+"-ws-"+mode, "config.json"), configs[mode], 0o644); err != nil {
				return 0, err
			}
			return timed(bulkhead, append(args[mode], id)...)
		}
		for _, mode := range []string{"overlay", "readonly"} {
			cfg := filepath.Join(dir, backend+"-"+mode+".toml")
			body := fmt.Sprintf("changes_dir = %q\naudit_log = %q\n[profiles.default]\nworkspace_mode = %q\n",
				filepath.Join(dir, "changes"), filepath.Join(dir, "audit.jsonl"), mode)
			if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
				return err
			}
			b := filepath.Join(dir, backend+"-ws-"+mode)
			if err := bundle.Make(b, []string{"sh", "-c", job}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
			}); err != nil {
				return err
			}
			args[mode] = []string{"--config", cfg, "--root", filepath.Join(dir, "root-ws"), "--backend", backend, "run", "--bundle", b}
			if configs[mode], err = os.ReadFile(filepath.Join(b, "config.json")); err != nil {
				return err
			}
			if _, err := runMode(mode, "ws-warm-"+backend+"-"+mode); err != nil {
				return err
			}
		}
		var tw, tr []time.Duration
		for i := 0; i < iterations; i++ {
			d, err := runMode("overlay", fmt.Sprintf("ws-%s-o%d", backend, i))
			if err != nil {
				return err
			}
			tw = append(tw, d)
			if d, err = runMode("readonly", fmt.Sprintf("ws-%s-r%d", backend, i)); err != nil {
				return err
			}
			tr = append(tr, d)
		}
		mw, mr := stats(backend, "workspace", tw), stats(backend, "read-only", tr)
		fmt.Printf("%-8s median ratio workspace/read-only bind: %.2f\n", backend, float64(mw)/float64(mr))
	}
	return nil
}
