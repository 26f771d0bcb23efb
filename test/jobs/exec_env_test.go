package jobs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/jobimage"
)

// TestExecGetsTheJobPlaces: a process an engine execs into a job-profile
// container (docker exec, ctr task exec) brings the engine's environment,
// not the container's: HOME=/root and the image's GOPATH=/go, no caches,
// no TMPDIR. It must get the home, the caches and the scratch as the
// container's first process does, or go mod download and go test fail
// at once (EROFS in the read-only root, ENOSPC in the 16m /tmp).
func TestExecGetsTheJobPlaces(t *testing.T) {
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) {
			b := newBox(t, backend)
			ws := checkout(t, jobimage.Jobs[0].Src, 65534, nil)
			dir := b.jobBundle(t, "tests", ws, "", []string{"sleep", "120"}, nil)
			id := jobID("exec-env")
			devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer devnull.Close()
			create := exec.Command(binaries.Bulkhead(t), "--root", b.root, "--config", b.cfg, "create", "--bundle", dir, id)
			create.Stdin, create.Stdout, create.Stderr = devnull, devnull, devnull
			if err := create.Run(); err != nil {
				t.Fatalf("create: %v", err)
			}
			t.Cleanup(func() {
				exec.Command(binaries.Bulkhead(t), "--root", b.root, "--config", b.cfg, "delete", "-f", id).Run()
			})
			b.bulkhead(t, "start", id)
			proc := map[string]any{
				"args": []string{"sh", "-c", `echo "HOME=$HOME GOPATH=$GOPATH TMPDIR=$TMPDIR"; mkdir -p "$GOPATH/pkg/mod" "$GOCACHE" && touch "$TMPDIR/x" && echo wrote`},
				"cwd":  "/workspace",
				"env":  []string{jobPath, "HOME=/root", "GOPATH=/go"},
				"user": map[string]int{"uid": 0, "gid": 0},
			}
			data, err := json.Marshal(proc)
			if err != nil {
				t.Fatal(err)
			}
			pf := filepath.Join(t.TempDir(), "process.json")
			if err := os.WriteFile(pf, data, 0o600); err != nil {
				t.Fatal(err)
			}
			// The output holds bulkhead's own lines too (a process that
			// ends before exec's verification is warned of): the job's
			// two lines are looked for as lines, in order.
			out := b.bulkhead(t, "exec", "--process", pf, id)
			lines := strings.Split(out, "\n")
			env := slices.Index(lines, "HOME=/home/sandbox GOPATH=/home/sandbox/go TMPDIR=/scratch")
			if wrote := slices.Index(lines, "wrote"); env < 0 || wrote < env {
				t.Fatalf("exec --process under the tests profile printed:\n%s\nwant the lines:\nHOME=/home/sandbox GOPATH=/home/sandbox/go TMPDIR=/scratch\nwrote", out)
			}
		})
	}
}
