package docker

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/fstree"
)

// image is the busybox + bulkhead-probe image every test runs.
const image = "bulkhead-test:latest"

// shared is the one private dockerd of this test binary: starting it and
// importing the image costs a few seconds, so tests share it, and TestMain
// stops it.
var shared struct {
	once sync.Once
	d    *engine.Docker
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.d != nil {
		if err := shared.d.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// daemon returns the shared dockerd, with runtimes bulkhead and
// bulkhead-runsc registered and the test image imported.
func daemon(t *testing.T) *engine.Docker {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: a private dockerd is started")
	}
	dir := binaries.Dir(t)
	shared.once.Do(func() {
		shared.err = fmt.Errorf("dockerd did not start")
		d, err := engine.StartDocker(engine.DockerOptions{Runtimes: map[string]engine.Runtime{
			"bulkhead":       {Path: filepath.Join(dir, "bulkhead")},
			"bulkhead-runsc": {Path: filepath.Join(dir, "bulkhead-runsc")},
		}})
		if err != nil {
			shared.err = err
			return
		}
		shared.d = d
		shared.err = importImage(d, dir)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.d
}

func importImage(d *engine.Docker, bin string) error {
	rootfs, err := os.MkdirTemp("", "bh-rootfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(rootfs)
	if err := bundle.Rootfs(rootfs); err != nil {
		return err
	}
	probe, err := os.ReadFile(filepath.Join(bin, "bulkhead-probe"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "bulkhead-probe"), probe, 0o755); err != nil {
		return err
	}
	// An executable that no loader runs (no ELF header, no #! line), and a
	// command that is a link to itself.
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "no-shebang"), []byte("echo hi\n"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink("loop", filepath.Join(rootfs, "bin", "loop")); err != nil {
		return err
	}
	return d.Import(rootfs, image)
}

// refusal tells whether docker's output is bulkhead refusing the container
// and naming the rule, as the engine shows it.
func refusal(r engine.Result) (rule string, ok bool) {
	if r.Code == 0 || !strings.Contains(r.Stderr, "Error response from daemon") || !strings.Contains(r.Stderr, "bulkhead: ") {
		return "", false
	}
	_, after, found := strings.Cut(r.Stderr, "(rule ")
	if !found {
		return "", false
	}
	rule, _, _ = strings.Cut(after, ":")
	return rule, rule != ""
}

// procStatus reads fields of /proc/self/status printed by a container.
func statusField(out, field string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// cgroupDir is the directory of pid's cgroup for a controller: cgroup v1
// (/sys/fs/cgroup/<controller>/<path>) or v2 (/sys/fs/cgroup/<path>).
func cgroupDir(t *testing.T, pid int, controller string) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var unified string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return filepath.Join("/sys/fs/cgroup", parts[1], parts[2])
			}
		}
	}
	if unified != "" {
		return filepath.Join("/sys/fs/cgroup", unified)
	}
	t.Fatalf("no %s cgroup for pid %d in\n%s", controller, pid, data)
	return ""
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// cgroupDirsNamed finds cgroup directories named id anywhere in the
// hierarchy (bulkhead's /bulkhead/<id>, Docker's /docker/<id>, a slice).
func cgroupDirsNamed(id string) []string {
	var found []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return nil
		}
		if strings.Count(path, "/") > 7 {
			return fs.SkipDir
		}
		if strings.Contains(e.Name(), id) {
			found = append(found, path)
			return fs.SkipDir
		}
		return nil
	})
	return found
}

// treeHash hashes every path, mode, owner-independent content and symlink
// target below dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	return fstree.Hash(t, dir, func(e fstree.Entry) string {
		line := fmt.Sprintf("%s %v %d", e.Rel, e.Info.Mode(), e.Info.ModTime().UnixNano())
		if e.Target != "" {
			return line + " -> " + e.Target
		}
		return strings.TrimSpace(line + " " + e.SHA256)
	})
}

// inTTY runs a docker command line under script(1), which gives it a
// pseudo-terminal as an interactive user would have.
func inTTY(t *testing.T, d *engine.Docker, cmdline string) string {
	t.Helper()
	cmd := exec.Command("script", "-qec", cmdline, "/dev/null")
	cmd.Env = d.Env()
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script -qec %q: %v\n%s", cmdline, err, out)
	}
	return string(out)
}

// bulkheadList is `bulkhead list` under the root dockerd gives runtimes.
func bulkheadList(t *testing.T, d *engine.Docker) string {
	t.Helper()
	out, err := exec.Command(binaries.Bulkhead(t), "--root", d.RuntimeRoot(), "list", "--quiet").CombinedOutput()
	if err != nil {
		t.Fatalf("bulkhead list: %v\n%s", err, out)
	}
	return string(out)
}
