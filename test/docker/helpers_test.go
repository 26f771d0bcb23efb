package docker

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/engine"
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
	return d.Import(rootfs, image)
}

// probeLine is one line of bulkhead-probe's output.
type probeLine struct {
	Control  string `json:"control"`
	Observed string `json:"observed"`
	Layer    string `json:"layer"`
	Pass     bool   `json:"pass"`
	Skipped  bool   `json:"skipped"`
	Detail   string `json:"detail"`
}

// parseProbe reads the probe's lines up to {"control":"done"}; done
// reports whether that line came (the probe did not die).
func parseProbe(t *testing.T, out string) (lines []probeLine, done bool) {
	t.Helper()
	s := bufio.NewScanner(strings.NewReader(out))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		text := strings.TrimSpace(s.Text())
		if !strings.HasPrefix(text, "{") {
			continue
		}
		var l probeLine
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			t.Errorf("probe line is not JSON: %v: %s", err, text)
			continue
		}
		if l.Control == "done" {
			return lines, true
		}
		lines = append(lines, l)
	}
	return lines, false
}

// assertProbePasses checks that the probe ran to the end, reported at
// least min controls, and that every control passed.
func assertProbePasses(t *testing.T, r engine.Result, min int) {
	t.Helper()
	lines, done := parseProbe(t, r.Stdout)
	if !done {
		t.Fatalf("probe did not finish (no done line)\n%s", r)
	}
	if len(lines) < min {
		t.Fatalf("probe reported only %d controls\n%s", len(lines), r)
	}
	for _, l := range lines {
		if !l.Pass {
			t.Errorf("control %s FAIL: observed %q, layer %q: %s", l.Control, l.Observed, l.Layer, l.Detail)
		}
	}
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

// processesMentioning lists processes whose command line contains s (a
// container id: the shim runs with -id <id>).
func processesMentioning(s string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), s) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// eventually polls cond for up to timeout; it returns cond's last answer.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// treeHash hashes every path, mode, owner-independent content and symlink
// target below dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var entries []string
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := e.Info()
		if err != nil {
			return err
		}
		entry := fmt.Sprintf("%s %v %d", rel, info.Mode(), info.ModTime().UnixNano())
		switch {
		case info.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			entry += " " + hex.EncodeToString(sum[:])
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			entry += " -> " + target
		}
		entries = append(entries, entry)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(entries)
	sum := sha256.Sum256([]byte(strings.Join(entries, "\n")))
	return hex.EncodeToString(sum[:])
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
