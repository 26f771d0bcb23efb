// Package ctrtest holds what the containerd and CRI integration tests share:
// ctr against a private containerd, the probe image packed as an OCI
// image-layout tar, the probe's verdicts, and what a container left behind.
package ctrtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/ociimage"
	"bulkhead.dev/bulkhead/test/probeout"
)

// Image is the busybox + bulkhead-probe image every test runs.
const Image = "docker.io/library/bulkhead-test:latest"

// Namespace is the containerd namespace of these tests. bulkhead's shim
// keeps runtime state in <the daemon's state dir>/runc/<namespace>.
const Namespace = "bulkhead-test"

// Daemon is one private containerd and the ctr binary that speaks to it.
type Daemon struct {
	*engine.Containerd
	Ctr string
	// NS is the containerd namespace ctr uses; Namespace when empty (CRI
	// tests use k8s.io, the CRI plugin's).
	NS string
}

// NeedRoot skips tests that start a containerd.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: a private containerd is started")
	}
}

// WithShimOnPath puts the directory of bulkhead and its shim, then dirs,
// first on PATH: containerd looks up containerd-shim-bulkhead-v2 there for
// runtime io.containerd.bulkhead.v2, and inherits the test's environment.
func WithShimOnPath(t testing.TB, dirs ...string) string {
	t.Helper()
	binaries.Shim(t)
	dir := binaries.Dir(t)
	want := strings.Join(append([]string{dir}, dirs...), ":") + ":"
	if !strings.HasPrefix(os.Getenv("PATH"), want) {
		os.Setenv("PATH", want+os.Getenv("PATH"))
	}
	return dir
}

// ImportProbeImage packs busybox + bulkhead-probe as Image and imports it.
func (d *Daemon) ImportProbeImage(t testing.TB) error {
	probe := binaries.Probe(t)
	return d.ImportRootfs(Image, nil, func(rootfs string) error {
		data, err := os.ReadFile(probe)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(rootfs, "bin", "bulkhead-probe"), data, 0o755)
	})
}

// ImportRootfs packs a busybox rootfs, after add changed it, as the OCI
// image-layout tar of image name and imports it.
func (d *Daemon) ImportRootfs(name string, entrypoint []string, add func(rootfs string) error) error {
	dir, err := os.MkdirTemp("", "bh-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rootfs := filepath.Join(dir, "rootfs")
	if err := bundle.Rootfs(rootfs); err != nil {
		return err
	}
	if add != nil {
		if err := add(rootfs); err != nil {
			return err
		}
	}
	tarPath := filepath.Join(dir, "image.tar")
	img := ociimage.Image{Name: name, Rootfs: rootfs, Entrypoint: entrypoint, Cmd: []string{"/bin/sh"}}
	if entrypoint != nil {
		img.Cmd = nil
	}
	if err := ociimage.Write(img, tarPath); err != nil {
		return err
	}
	r := d.Run(2*time.Minute, "image", "import", tarPath)
	if r.Code != 0 {
		return fmt.Errorf("import %s: %s", name, r)
	}
	return nil
}

// Result is one ctr invocation.
type Result struct {
	Args           []string
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return fmt.Sprintf("ctr %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.Code, r.Stdout, r.Stderr)
}

// Run runs ctr in the test namespace with a deadline.
func (d *Daemon) Run(timeout time.Duration, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ns := d.NS
	if ns == "" {
		ns = Namespace
	}
	full := append([]string{"--address", d.Address, "--namespace", ns}, args...)
	cmd := exec.CommandContext(ctx, d.Ctr, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Args: args, Stdout: stdout.String(), Stderr: stderr.String()}
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

// Must runs ctr and fails the test unless it exits 0.
func (d *Daemon) Must(t testing.TB, args ...string) string {
	t.Helper()
	r := d.Run(time.Minute, args...)
	if r.Code != 0 {
		t.Fatalf("%s\ncontainerd log:\n%s", r, d.LogTail(20))
	}
	return r.Stdout
}

func (d *Daemon) LogTail(n int) string {
	data, _ := os.ReadFile(d.Log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// RuntimeRoot is the --root bulkhead's shim gives bulkhead for the test
// namespace.
func RuntimeRoot() string { return RuntimeRootOf(Namespace) }

// daemons are this test process's containerds, by the namespace its
// tests use (Serves).
var daemons sync.Map

// Serves records that d is the containerd whose tasks in namespace ns
// the tests look for.
func Serves(ns string, d *Daemon) { daemons.Store(ns, d) }

// RuntimeRootOf is bulkhead's shim's --root for a containerd namespace:
// <state>/runc/<namespace> of the daemon that Serves it, as the shim keeps
// each containerd's runtime state apart.
func RuntimeRootOf(ns string) string {
	d, ok := daemons.Load(ns)
	if !ok {
		panic("no containerd of this test process serves namespace " + ns)
	}
	return d.(*Daemon).runtimeRoot(ns)
}

// runtimeRoot is bulkhead's --root for the daemon's tasks in namespace ns.
func (d *Daemon) runtimeRoot(ns string) string { return filepath.Join(d.Dir, "state", "runc", ns) }

// Leftovers is Leftovers of the daemon's namespace (d.NS).
func (d *Daemon) Leftovers(t testing.TB, id string) []string {
	t.Helper()
	ns := d.NS
	if ns == "" {
		ns = Namespace
	}
	return leftoversUnder(t, d.runtimeRoot(ns), id)
}

var idSeq struct {
	sync.Mutex
	n int
}

// NewID is a container id unique to this test process.
func NewID(prefix string) string {
	idSeq.Lock()
	defer idSeq.Unlock()
	idSeq.n++
	return fmt.Sprintf("bh-%s-%d-%d", prefix, os.Getpid(), idSeq.n)
}

// Leftovers lists what a container id left on the host
// (engine.Leftovers under the test namespace's runtime root) and whether
// bulkhead still lists it there.
func Leftovers(t testing.TB, id string) []string {
	t.Helper()
	return leftoversUnder(t, RuntimeRoot(), id)
}

func leftoversUnder(t testing.TB, root, id string) []string {
	t.Helper()
	found := engine.Leftovers(id, root)
	out, err := exec.Command(binaries.Bulkhead(t), "--root", root, "list", "--quiet").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "no such file") {
		t.Errorf("bulkhead list: %v\n%s", err, out)
	}
	for _, line := range strings.Fields(string(out)) {
		if line == id {
			found = append(found, "bulkhead record "+id+" under "+root)
		}
	}
	return found
}

// ShimRuntime is the runtime type containerd maps to
// containerd-shim-bulkhead-v2 on its PATH.
const ShimRuntime = "io.containerd.bulkhead.v2"

// ProbeUnder runs bulkhead-probe with `ctr run --rm`, the runtime flags
// given and a host folder bound at /workspace, checks every control ran
// and held, and that nothing is left.
func ProbeUnder(t *testing.T, d *Daemon, runtimeArgs ...string) {
	t.Helper()
	id := NewID("probe")
	ws := probeout.NewWorkspace(t)
	args := append([]string{"run", "--rm"}, runtimeArgs...)
	args = append(args, WorkspaceMount(ws)...)
	args = append(args, CgroupMount...)
	out := probeout.UntilEvidence(t, ws, func(int) string {
		r := d.Run(2*time.Minute, append(args, Image, id, "bulkhead-probe")...)
		if r.Code != 0 {
			t.Fatalf("%s\ncontainerd log:\n%s", r, d.LogTail(20))
		}
		return r.Stdout
	})
	probeout.AssertPasses(t, out, ws)
	if !engine.Eventually(10*time.Second, func() bool { return len(Leftovers(t, id)) == 0 }) {
		t.Errorf("after ctr run --rm: %s", strings.Join(Leftovers(t, id), "\n"))
	}
}

// WorkspaceMount is the ctr run flag that binds ws at /workspace.
func WorkspaceMount(ws *probeout.Workspace) []string {
	return []string{"--mount", "type=bind,src=" + ws.Dir + ",dst=/workspace,options=rbind:rw"}
}

// CgroupMount is the ctr run flag that mounts the container's cgroups
// read-only at /sys/fs/cgroup, as Docker and CRI do and ctr does not: the
// probe's cpu control judges by its own cgroup's counters, and without
// them it has no evidence.
var CgroupMount = []string{"--mount", "type=cgroup,src=cgroup,dst=/sys/fs/cgroup,options=ro:nosuid:nodev:noexec"}

// RefusalLeavesNothing runs a container bulkhead refuses (a bind of /root)
// through the shim and through the runc shim's --runc-binary: it must not
// run, ctr must show the rule, and nothing of it may be left.
func RefusalLeavesNothing(t *testing.T, d *Daemon) {
	for _, tc := range []struct {
		name    string
		runtime []string
	}{
		{"shim", []string{"--runtime", ShimRuntime}},
		{"runc-binary", []string{"--runtime", "io.containerd.runc.v2", "--runc-binary", binaries.Bulkhead(t)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := NewID("refused")
			args := append([]string{"run", "--rm"}, tc.runtime...)
			args = append(args, "--mount", "type=bind,src=/root,dst=/x,options=rbind:ro", Image, id, "true")
			r := d.Run(time.Minute, args...)
			t.Cleanup(func() { d.Run(30*time.Second, "container", "rm", id) })
			if r.Code == 0 {
				t.Fatalf("a bind of /root ran:\n%s", r)
			}
			if !strings.Contains(r.Stderr, "bulkhead") || !strings.Contains(r.Stderr, "rule ") {
				t.Errorf("the error does not name bulkhead's rule:\n%s", r)
			}
			t.Logf("refused: %s", strings.TrimSpace(r.Stderr))
			if tasks := d.Must(t, "task", "ls", "--quiet"); strings.Contains(tasks, id) {
				t.Errorf("task %s still listed:\n%s", id, tasks)
			}
			if !engine.Eventually(10*time.Second, func() bool { return len(Leftovers(t, id)) == 0 }) {
				t.Errorf("refused container left:\n%s", strings.Join(Leftovers(t, id), "\n"))
			}
		})
	}
}

// ShimRunsBulkhead starts a long-running container through the runtime
// flags given and checks what runs it, from the host: which shim serves it
// (shimName), that bulkhead recorded it under the runc shim's root, and
// that its process got the policy's identity and capabilities. Then it
// stops and removes it, and checks nothing is left.
func ShimRunsBulkhead(t *testing.T, d *Daemon, shimName string, runtimeArgs ...string) {
	t.Helper()
	id := RunDetached(t, d, runtimeArgs...)
	var shim string
	for _, p := range Leftovers(t, id) {
		if strings.HasPrefix(p, "process ") && strings.Contains(p, "-id "+id) {
			shim = p
		}
	}
	if !strings.Contains(shim, "/"+shimName+" ") {
		t.Errorf("container %s is not served by %s; processes: %s", id, shimName, strings.Join(Leftovers(t, id), "\n"))
	}
	out, err := exec.Command(binaries.Bulkhead(t), "--root", RuntimeRoot(), "list", "--quiet").CombinedOutput()
	if err != nil || !strings.Contains(string(out), id) {
		t.Errorf("bulkhead has no record of %s under %s: %v\n%s", id, RuntimeRoot(), err, out)
	}
	var pid string
	for _, line := range strings.Split(d.Must(t, "task", "ls"), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			pid = f[1]
		}
	}
	// Metrics travel from the shim's cgroup reader to containerd as a typed
	// Any (the kubelet's container stats come this way).
	if r := d.Run(time.Minute, "task", "metrics", id); r.Code != 0 || !strings.Contains(r.Stdout, "memory") {
		t.Errorf("task metrics: %s", r)
	}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatalf("task %s pid %q: %v", id, pid, err)
	}
	for _, want := range []string{"Uid:\t65534\t65534\t65534\t65534", "CapEff:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("task %s: /proc/%s/status lacks %q:\n%s", id, pid, want, status)
		}
	}
}

// Containerd2 returns the directory holding containerd 2.x (containerd,
// ctr, containerd-shim-runc-v2), built once by hack/install-containerd2.sh
// into its cache (/var/tmp/bulkhead-containerd2, about 2.5 minutes cold).
func Containerd2(t testing.TB) string {
	t.Helper()
	script := filepath.Join(repoRoot(), "hack", "install-containerd2.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func repoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// RunDetached starts `sleep 60` with `ctr run -d` and the runtime flags
// given; at the end of the test it kills and removes the container and
// checks nothing of it is left.
func RunDetached(t *testing.T, d *Daemon, runtimeArgs ...string) string {
	t.Helper()
	id := NewID("detached")
	args := append([]string{"run", "-d"}, runtimeArgs...)
	d.Must(t, append(args, Image, id, "sleep", "60")...)
	t.Cleanup(func() {
		d.Run(30*time.Second, "task", "kill", "--signal", "SIGKILL", id)
		engine.Eventually(10*time.Second, func() bool {
			return d.Run(10*time.Second, "task", "delete", id).Code == 0 || !strings.Contains(d.Run(10*time.Second, "task", "ls", "-q").Stdout, id)
		})
		d.Run(30*time.Second, "container", "rm", id)
		if !engine.Eventually(10*time.Second, func() bool { return len(Leftovers(t, id)) == 0 }) {
			t.Errorf("after task delete and container rm: %s", strings.Join(Leftovers(t, id), "\n"))
		}
	})
	return id
}

// TaskBundle is the bundle directory containerd made for a task of the
// test namespace (io.containerd.runtime.v2.task below its state dir).
func (d *Daemon) TaskBundle(id string) string {
	return filepath.Join(d.Dir, "state", "io.containerd.runtime.v2.task", Namespace, id)
}

// SurvivesRestart starts a container through the runtime flags given,
// restarts containerd, and checks containerd found the shim again: the
// task is still running, and exec and kill reach it through the shim.
func SurvivesRestart(t *testing.T, d *Daemon, runtimeArgs ...string) {
	t.Helper()
	id := RunDetached(t, d, runtimeArgs...)
	if err := d.Restart(); err != nil {
		t.Fatalf("restart containerd: %v", err)
	}
	var tasks string
	if !engine.Eventually(15*time.Second, func() bool {
		tasks = d.Run(10*time.Second, "task", "ls").Stdout
		return strings.Contains(tasks, id) && strings.Contains(tasks, "RUNNING")
	}) {
		t.Fatalf("after a containerd restart the task is gone or not running:\n%s\ncontainerd log:\n%s", tasks, d.LogTail(20))
	}
	// The verdict is the exit status: containerd 1.6's shim IO can lose a
	// short-lived process's output (seen under load: exit 0, no stdout),
	// and the status comes from the shim's wait, which restart is about.
	r := d.Run(time.Minute, "task", "exec", "--exec-id", "after-restart", id, "sh", "-c", `test "$(id -u)" = 65534`)
	if r.Code != 0 {
		t.Errorf("exec after restart, as uid 65534: %s\ncontainerd log:\n%s", r, d.LogTail(20))
	}
}
