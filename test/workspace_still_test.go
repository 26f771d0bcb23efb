package test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
)

// A live export reads the workspace with the job paused, and lets it go
// on before it writes a byte: a job that changes an entry between the
// export's judgement of a directory and its write of the entry (a HEAD
// directory swapped for a HEAD file) got past the judgement, and a reader
// that stopped reading (diff | head, a pager left open) left the job
// paused for good, or for as long as the reader waited.
func TestWorkspaceDiffHoldsTheJobStill(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			src := workspaceSource(t)
			id := uniqueID("still-" + backend)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			b := workspaceBundle(t, src, "head -c 4194304 /dev/zero > /workspace/big.bin && touch /workspace/done && while :; do sleep 1; done")
			must(t, append(g, "create", "--bundle", b, id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			must(t, append(g, "start", id)...)
			done := filepath.Join(root, "bulkhead", id, "ws", "0", "merged", "done")
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				if _, err := os.Stat(done); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the job did not write its file within 60 s")
				}
			}

			log := filepath.Join(t.TempDir(), "diff.log")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			diff := exec.Command(binaries.Bulkhead(t), append([]string{"--debug", "--log", log, "--log-format", "json"}, append(g, "diff", "--format", "tar", id)...)...)
			diff.Stdout, diff.Stderr = w, &stderr
			if err := diff.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			defer r.Close()
			// Its first bytes: 4 MiB do not fit in a pipe, so the diff
			// stands at its write from here on, and the job runs.
			first := make([]byte, 512)
			if _, err := io.ReadFull(r, first); err != nil {
				t.Fatalf("the diff's first bytes: %v\n%s", err, stderr.String())
			}
			if s := containerState(t, g, id).Status; s != "running" {
				t.Fatalf("status %q while the diff's output is unread, want running", s)
			}
			tr := tar.NewReader(io.MultiReader(bytes.NewReader(first), r))
			var names []string
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("the diff's tar: %v", err)
				}
				names = append(names, h.Name)
			}
			if err := diff.Wait(); err != nil {
				t.Fatalf("diff: %v\n%s", err, stderr.String())
			}
			if !slices.Contains(names, "big.bin") {
				t.Fatalf("the diff's tar holds %q, want big.bin among them", names)
			}
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			paused := bytes.Index(data, []byte("container "+id+" paused for its export"))
			resumed := bytes.Index(data, []byte("container "+id+" resumed after its export"))
			if paused < 0 || resumed < paused {
				t.Fatalf("the diff's log does not show the job paused, then resumed:\n%s", data)
			}

			// A reader that goes away after a few bytes (diff | head -c 10)
			// ends the diff: the job goes on.
			r, w, err = os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			diff = exec.Command(binaries.Bulkhead(t), append(g, "diff", "--format", "tar", id)...)
			diff.Stdout = w
			if err := diff.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if _, err := io.ReadFull(r, make([]byte, 10)); err != nil {
				t.Fatal(err)
			}
			r.Close()
			if err := diff.Wait(); err == nil {
				t.Fatal("the diff wrote 4 MiB to a pipe nobody reads and exited 0")
			}
			if s := containerState(t, g, id).Status; s != "running" {
				t.Fatalf("status %q after a diff whose reader went away, want running", s)
			}

			// Ctrl-C, or timeout(1), signals the diff's whole process
			// group, the backend's pause and resume with it: a resume
			// ended half way left the job paused for good. Whenever the
			// signals land, the diff ends with the job running.
			for i, after := range []time.Duration{0, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
				diff = exec.Command(binaries.Bulkhead(t), append(g, "diff", "--format", "tar", id)...)
				diff.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := diff.Start(); err != nil {
					t.Fatal(err)
				}
				ended := make(chan error, 1)
				go func() { ended <- diff.Wait() }()
				time.Sleep(after)
			signalling:
				for {
					_ = syscall.Kill(-diff.Process.Pid, syscall.SIGINT)
					select {
					case <-ended:
						break signalling
					case <-time.After(10 * time.Millisecond):
					}
				}
				if s := containerState(t, g, id).Status; s != "running" {
					t.Fatalf("status %q after a diff whose process group got SIGINT %s after it started (round %d), want running", s, after, i)
				}
			}
		})
	}
}
