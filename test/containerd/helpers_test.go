package containerd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/ociimage"
)

// image is the busybox + bulkhead-probe image every test runs.
const image = "docker.io/library/bulkhead-test:latest"

// namespace is the containerd namespace of these tests. The runc shim
// keeps runtime state under /run/containerd/runc/<namespace> whatever the
// daemon's state dir, so a namespace of their own keeps them apart from
// the host's containerd.
const namespace = "bulkhead-test"

// daemon is one private containerd with the test image imported.
type daemon struct {
	*engine.Containerd
	ctr string // the ctr binary that speaks to it
}

// shared is the private containerd 1.6 of this test binary.
var shared struct {
	once sync.Once
	d    *daemon
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

// needRoot skips tests that start a containerd.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: a private containerd is started")
	}
}

// withShimOnPath puts the directory of bulkhead and its shim first on
// PATH, where containerd looks up containerd-shim-bulkhead-v2 for runtime
// io.containerd.bulkhead.v2. containerd inherits the test's environment.
func withShimOnPath(t *testing.T) string {
	t.Helper()
	binaries.Shim(t)
	dir := binaries.Dir(t)
	if !strings.HasPrefix(os.Getenv("PATH"), dir+":") {
		os.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	}
	return dir
}

// containerd16 returns the shared containerd (Debian's 1.6).
func containerd16(t *testing.T) *daemon {
	t.Helper()
	needRoot(t)
	withShimOnPath(t)
	shared.once.Do(func() {
		c, err := engine.StartContainerd(engine.ContainerdOptions{})
		if err != nil {
			shared.err = err
			return
		}
		shared.d = &daemon{Containerd: c, ctr: "ctr"}
		shared.err = shared.d.importImage(t, image)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.d
}

// importImage packs busybox + bulkhead-probe as an OCI image-layout tar
// and imports it.
func (d *daemon) importImage(t *testing.T, name string) error {
	dir, err := os.MkdirTemp("", "bh-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rootfs := filepath.Join(dir, "rootfs")
	if err := bundle.Rootfs(rootfs); err != nil {
		return err
	}
	probe, err := os.ReadFile(binaries.Probe(t))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "bulkhead-probe"), probe, 0o755); err != nil {
		return err
	}
	tarPath := filepath.Join(dir, "image.tar")
	if err := ociimage.Write(ociimage.Image{Name: name, Rootfs: rootfs, Cmd: []string{"/bin/sh"}}, tarPath); err != nil {
		return err
	}
	r := d.run(2*time.Minute, "image", "import", tarPath)
	if r.Code != 0 {
		return fmt.Errorf("import %s: %s", name, r)
	}
	return nil
}

// result is one ctr invocation.
type result struct {
	Args           []string
	Stdout, Stderr string
	Code           int
}

func (r result) String() string {
	return fmt.Sprintf("ctr %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.Code, r.Stdout, r.Stderr)
}

// run runs ctr in the test namespace with a deadline.
func (d *daemon) run(timeout time.Duration, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	full := append([]string{"--address", d.Address, "--namespace", namespace}, args...)
	cmd := exec.CommandContext(ctx, d.ctr, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{Args: args, Stdout: stdout.String(), Stderr: stderr.String()}
	if ctx.Err() != nil {
		r.Stderr += fmt.Sprintf("\n(timed out after %s)", timeout)
	}
	if err != nil {
		r.Code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			r.Code = ee.ExitCode()
		}
	}
	return r
}

// must runs ctr and fails the test unless it exits 0.
func (d *daemon) must(t *testing.T, args ...string) string {
	t.Helper()
	r := d.run(time.Minute, args...)
	if r.Code != 0 {
		t.Fatalf("%s\ncontainerd log:\n%s", r, d.logTail(20))
	}
	return r.Stdout
}

func (d *daemon) logTail(n int) string {
	data, _ := os.ReadFile(d.Log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// runtimeRoot is the --root the runc shim gives its runtime binary.
func runtimeRoot() string { return filepath.Join("/run/containerd/runc", namespace) }

var idSeq struct {
	sync.Mutex
	n int
}

// newID is a container id unique to this test process.
func newID(prefix string) string {
	idSeq.Lock()
	defer idSeq.Unlock()
	idSeq.n++
	return fmt.Sprintf("bh-%s-%d-%d", prefix, os.Getpid(), idSeq.n)
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

// assertProbePasses checks that the probe ran to its done line, reported
// at least min controls, and that every control passed.
func assertProbePasses(t *testing.T, out string, min int) {
	t.Helper()
	var lines []probeLine
	done := false
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
			done = true
			break
		}
		lines = append(lines, l)
	}
	if !done {
		t.Fatalf("probe did not finish (no done line):\n%s", out)
	}
	if len(lines) < min {
		t.Fatalf("probe reported only %d controls:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if !l.Pass {
			t.Errorf("control %s FAIL: observed %q, layer %q: %s", l.Control, l.Observed, l.Layer, l.Detail)
		}
	}
	t.Logf("probe: %d controls passed", len(lines))
}

// leftovers lists what a container id left on the host: processes naming
// it (its shim runs with -id <id>), cgroup directories named after it,
// bulkhead's record of it under the runtime root.
func leftovers(t *testing.T, id string) []string {
	t.Helper()
	var found []string
	self := fmt.Sprint(os.Getpid())
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' || e.Name() == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), id) {
			found = append(found, "process "+e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return nil
		}
		if strings.Count(path, "/") > 7 {
			return fs.SkipDir
		}
		if strings.Contains(e.Name(), id) {
			found = append(found, "cgroup "+path)
			return fs.SkipDir
		}
		return nil
	})
	out, err := exec.Command(binaries.Bulkhead(t), "--root", runtimeRoot(), "list", "--quiet").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "no such file") {
		t.Errorf("bulkhead list: %v\n%s", err, out)
	}
	for _, line := range strings.Fields(string(out)) {
		if line == id {
			found = append(found, "bulkhead record "+id+" under "+runtimeRoot())
		}
	}
	for _, p := range []string{filepath.Join(runtimeRoot(), id)} {
		if _, err := os.Stat(p); err == nil {
			found = append(found, "state "+p)
		}
	}
	return found
}

// eventually polls cond for up to timeout.
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
