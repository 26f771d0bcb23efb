package jobs

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/fstree"
	"bulkhead.dev/bulkhead/test/jobimage"
)

var formatters = jobimage.Formatters

// treeLines describes a checkout for comparison: paths, types and
// contents; ownership is not compared (the sandbox's and the host's users
// differ by design).
func treeLines(t *testing.T, dir string) []string {
	return fstree.Lines(t, dir, func(e fstree.Entry) string {
		return e.Rel + " " + e.Info.Mode().Type().String() + " " + e.SHA256 + e.Target
	})
}

// TestFormatterRewritesTheCheckout: under the formatter profile, on runc
// and runsc, gofmt -w and black rewrite a /workspace checkout; `bulkhead
// diff` shows exactly what the same formatters change on the host (the
// patch applied to a clean copy gives the host-formatted tree), and the
// host checkout is unchanged.
//
// The checkout belongs to uid 1000, as a developer's clone does; the
// id-mapped workspace shows its files as the sandbox user's.
func TestFormatterRewritesTheCheckout(t *testing.T) {
	needTools(t, "/usr/local/go/bin/gofmt", "/usr/bin/black", "/usr/bin/git")
	want := checkout(t, "fmt", 0, nil)
	if o := command(t, want, hostEnv(t), jobimage.HostArgv(formatters)...); o.code != 0 {
		t.Fatalf("formatters on the host: %v", o)
	}
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) {
			b := newBox(t, backend)
			ws := checkout(t, "fmt", 1000, nil)
			before := treeLines(t, ws)
			bundleDir := b.jobBundle(t, "formatter", ws, ".", formatters, nil)
			id := jobID("fmt")
			b.bulkhead(t, "create", "--bundle", bundleDir, id)
			t.Cleanup(func() { command(t, "", os.Environ(), b.argv(t, "delete", "--force", id)...) })
			if p, bk := b.profileOf(t, id); p != "formatter" || bk != backend {
				t.Fatalf("created under %s on %s, want formatter on %s", p, bk, backend)
			}
			b.bulkhead(t, "start", id)
			b.waitStopped(t, id)
			patch := b.bulkhead(t, "diff", id, "--format", "patch")
			b.bulkhead(t, "delete", id)

			if after := treeLines(t, ws); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Errorf("the host checkout changed:\nbefore %v\nafter  %v", before, after)
			}
			clean := checkout(t, "fmt", 0, nil)
			apply := exec.Command("git", "apply", "--unsafe-paths", "-")
			apply.Dir, apply.Stdin = clean, strings.NewReader(patch)
			if out, err := apply.CombinedOutput(); err != nil {
				t.Fatalf("git apply: %v: %s\npatch:\n%s", err, out, patch)
			}
			got, wantLines := treeLines(t, clean), treeLines(t, want)
			if strings.Join(got, "\n") != strings.Join(wantLines, "\n") {
				t.Fatalf("the diff is not the formatting changes:\npatch:\n%s\ngot  %v\nwant %v", patch, got, wantLines)
			}
			for _, f := range []string{"pkg/sum.go", "tool.py"} {
				if !strings.Contains(patch, "+++ b/"+f) {
					t.Errorf("the patch does not change %s:\n%s", f, patch)
				}
			}
		})
	}
}

// argv is a bulkhead command line with this box's root and config.
func (b *box) argv(t *testing.T, args ...string) []string {
	return append([]string{binaries.Bulkhead(t), "--root", b.root, "--config", b.cfg}, args...)
}

// waitStopped waits for a started container's process to exit.
func (b *box) waitStopped(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(jobTimeout)
	for time.Now().Before(deadline) {
		var st struct{ Status string }
		if err := json.Unmarshal([]byte(b.bulkhead(t, "state", id)), &st); err != nil {
			t.Fatal(err)
		}
		if st.Status == "stopped" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s still running after %v", id, jobTimeout)
}
