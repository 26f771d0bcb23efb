package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A working directory is resolved as the container will see it: through a
// link a checkout's author committed (`evil -> /proc/self/fd/7`, the
// descriptor runc leaked in CVE-2024-21626) and through one the job made
// in its workspace or /tmp before an exec, not only through the image's.
// Each is refused before the backend runs; a real directory in the
// workspace is still a working directory.
func TestWorkspaceCwdThroughALink(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			src := workspaceSource(t)
			if err := os.Symlink("/proc/self/fd/7", filepath.Join(src, "evil")); err != nil {
				t.Fatal(err)
			}
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			const refusal = "cwd leads through symlinks in the container into /proc (under /proc, /dev or /sys"

			id := uniqueID("wscwd-" + backend)
			b := bundle.New(t, []string{"pwd"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: src, Options: []string{"rbind", "rw"}})
				s.Process.Cwd = "/workspace/evil"
			})
			r := bulkhead(t, "", append(g, "create", "--bundle", b, id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			if r.code == 0 || !strings.Contains(r.stderr, refusal) {
				t.Fatalf("create with cwd through the checkout's link: exit %d, want the cwd refused\n%s", r.code, r.stderr)
			}
			assertGone(t, root, backend, id)

			id = uniqueID("wscwd-exec-" + backend)
			runToStart := workspaceBundle(t, src, "ln -s /proc/self/fd/5 /workspace/made; ln -s /proc/self /tmp/x; sleep 300")
			must(t, append(g, "create", "--bundle", runToStart, id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			must(t, append(g, "start", id)...)
			deadline := time.Now().Add(30 * time.Second)
			for bulkhead(t, "", append(g, "exec", id, "test", "-L", "/workspace/made")...).code != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the job's link did not appear in 30 s")
				}
				time.Sleep(50 * time.Millisecond)
			}
			r = bulkhead(t, "", append(g, "exec", "--cwd", "/workspace/made", id, "pwd")...)
			if r.code == 0 || !strings.Contains(r.stderr, refusal) {
				t.Fatalf("exec --cwd through the job's own link: exit %d, stdout %q, want the cwd refused\n%s", r.code, r.stdout, r.stderr)
			}
			if backend == "runc" {
				// A link in the job's own /tmp, which no spec names: runc
				// resolves it in the container, and so does the rule. Inside
				// gVisor the link leads to gVisor's own /proc.
				r = bulkhead(t, "", append(g, "exec", "--cwd", "/tmp/x", id, "pwd")...)
				if r.code == 0 || !strings.Contains(r.stderr, "cwd leads through symlinks in the container into /proc (under /proc, /dev or /sys") {
					t.Fatalf("exec --cwd through the job's link in /tmp: exit %d, stdout %q, want the cwd refused\n%s", r.code, r.stdout, r.stderr)
				}
			}
			r = bulkhead(t, "", append(g, "exec", "--cwd", "/workspace/sub", id, "pwd")...)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "/workspace/sub" {
				t.Fatalf("exec --cwd /workspace/sub: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}
