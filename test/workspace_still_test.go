package test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
)

// A live export reads the workspace with the job paused, and lets it go
// on after: a job that changes an entry between the export's judgement of
// a directory and its write of the entry (a HEAD directory swapped for a
// HEAD file) got past the judgement. The diff's output is left unread,
// so it stands at its write, and the container must be paused then.
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

			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			diff := exec.Command(binaries.Bulkhead(t), append(g, "diff", "--format", "tar", id)...)
			diff.Stdout, diff.Stderr = w, &stderr
			if err := diff.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			defer r.Close()
			// 4 MiB do not fit in a pipe: the diff waits at its write.
			for deadline := time.Now().Add(60 * time.Second); containerState(t, g, id).Status != "paused"; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the container was not paused within 60 s of a diff that stands at its write")
				}
			}
			tr := tar.NewReader(r)
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
			if s := containerState(t, g, id).Status; s != "running" {
				t.Fatalf("status %q after the diff, want running again", s)
			}
			if !slices.Contains(names, "big.bin") {
				t.Fatalf("the diff's tar holds %q, want big.bin among them", names)
			}
		})
	}
}
