// Package cri runs pods under bulkhead through containerd 1.6's CRI plugin
// and crictl, the path a Kubernetes RuntimeClass takes: config.toml gets
// its runtime handler from `bulkhead install containerd`, the handler runs
// containerd-shim-bulkhead-v2 with no options, and the pod sandbox and its
// app container both get the policy. Images are built here (a static pause
// program, busybox + bulkhead-probe); crictl comes from
// hack/install-crictl.sh (cached in /var/tmp/bulkhead-crictl).
package cri

import (
	"bytes"
	"context"
	"encoding/json"
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
	"bulkhead.dev/bulkhead/test/ctrtest"
	"bulkhead.dev/bulkhead/test/engine"
)

const (
	// handler is the runtime handler `bulkhead install containerd` adds.
	handler = "bulkhead"
	// pauseImage is the sandbox image the CRI config names.
	pauseImage = "bulkhead.dev/pause:test"
	// criNamespace is the containerd namespace of the CRI plugin.
	criNamespace = "k8s.io"
	// bridge is the CNI bridge of these tests: containerd 1.6 refuses a pod
	// whose eth0 has no address, so the sandbox gets one from a private
	// range (bulkhead then gives the pod a new namespace with loopback only).
	bridge = "bhtest0"
)

var shared struct {
	once   sync.Once
	d      *ctrtest.Daemon
	crictl string
	err    error
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
		_ = exec.Command("ip", "link", "del", bridge).Run()
	}
	os.Exit(code)
}

func repoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// criConfig is containerd 1.6's config with the CRI plugin on; the
// bulkhead handler is then added by `bulkhead install containerd`.
func criConfig(t testing.TB, dir, address string) (string, error) {
	cniConf := filepath.Join(dir, "cni")
	if err := os.MkdirAll(cniConf, 0o755); err != nil {
		return "", err
	}
	conflist := fmt.Sprintf(`{"cniVersion":"0.4.0","name":"bulkhead-test","plugins":[{"type":"bridge","bridge":%q,"isGateway":false,"ipMasq":false,
"ipam":{"type":"host-local","ranges":[[{"subnet":"10.250.99.0/24"}]],"dataDir":%q}}]}`, bridge, filepath.Join(dir, "ipam"))
	if err := os.WriteFile(filepath.Join(cniConf, "10-bulkhead-test.conflist"), []byte(conflist), 0o644); err != nil {
		return "", err
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # the pause container asks for oom_score_adj -998; root here lacks
  # CAP_SYS_RESOURCE, so containerd must not lower it below its own
  restrict_oom_score_adj = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), address, address+".ttrpc",
		filepath.Join(dir, "opt"), pauseImage, cniConf)
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command(binaries.Bulkhead(t), "install", "containerd", "--config", path, "--config-version", "2").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bulkhead install containerd: %v\n%s", err, out)
	}
	data, err := os.ReadFile(path)
	return string(data), err
}

// daemon starts the shared CRI containerd and imports the two images.
func daemon(t *testing.T) (*ctrtest.Daemon, string) {
	t.Helper()
	ctrtest.NeedRoot(t)
	ctrtest.WithShimOnPath(t)
	shared.once.Do(func() {
		shared.err = fmt.Errorf("containerd with CRI did not start")
		if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
			out, err := exec.Command("bash", filepath.Join(repoRoot(), "hack", "install-deps.sh"), "containernetworking-plugins").CombinedOutput()
			if err != nil {
				shared.err = fmt.Errorf("install containernetworking-plugins: %v\n%s", err, out)
				return
			}
		}
		crictlBin, err := installCrictl()
		if err != nil {
			shared.err = err
			return
		}
		var configErr error
		c, err := engine.StartContainerdConfig(engine.ContainerdConfigOptions{
			Binary: "/usr/bin/containerd",
			Config: func(dir, address string) string {
				text, err := criConfig(t, dir, address)
				configErr = err
				return text
			},
		})
		if configErr != nil {
			shared.err = configErr
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if err != nil {
			shared.err = err
			return
		}
		d := &ctrtest.Daemon{Containerd: c, Ctr: "ctr", NS: criNamespace}
		shared.d, shared.crictl = d, crictlBin
		if r := (crictl{bin: crictlBin, address: c.Address}).run("version"); r.err != nil {
			shared.err = fmt.Errorf("the CRI plugin does not answer: %s\ncontainerd log:\n%s", r, d.LogTail(10))
			return
		}
		if shared.err = d.ImportProbeImage(t); shared.err != nil {
			return
		}
		shared.err = importPause(d)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.d, shared.crictl
}

func installCrictl() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(), "hack", "install-crictl.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/install-crictl.sh: %v\n%s", err, stderr.String())
	}
	return filepath.Join(strings.TrimSpace(string(out)), "crictl"), nil
}

// importPause builds the static pause program and packs it as pauseImage.
func importPause(d *ctrtest.Daemon) error {
	return d.ImportRootfs(pauseImage, []string{"/pause"}, func(rootfs string) error {
		cmd := exec.Command("go", "build", "-o", filepath.Join(rootfs, "pause"), "./test/cri/pause")
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build pause: %v\n%s", err, out)
		}
		return nil
	})
}

// crictl runs crictl against the shared containerd.
type crictl struct {
	bin, address string
}

type result struct {
	args           []string
	stdout, stderr string
	err            error
}

func (r result) String() string {
	return fmt.Sprintf("crictl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.err, r.stdout, r.stderr)
}

func (c crictl) run(args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	full := append([]string{"--runtime-endpoint", "unix://" + c.address, "--image-endpoint", "unix://" + c.address, "--timeout", "60s"}, args...)
	cmd := exec.CommandContext(ctx, c.bin, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return result{args: args, stdout: stdout.String(), stderr: stderr.String(), err: err}
}

func (c crictl) must(t *testing.T, d *ctrtest.Daemon, args ...string) string {
	t.Helper()
	r := c.run(args...)
	if r.err != nil {
		t.Fatalf("%s\ncontainerd log:\n%s", r, d.LogTail(15))
	}
	return strings.TrimSpace(r.stdout)
}

// infoPid reads info.pid from `crictl inspect[p] -o json`.
func (c crictl) infoPid(t *testing.T, d *ctrtest.Daemon, verb, id string) int {
	t.Helper()
	var v struct {
		Info struct {
			Pid int `json:"pid"`
		} `json:"info"`
	}
	out := c.must(t, d, verb, "-o", "json", id)
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Info.Pid <= 0 {
		t.Fatalf("%s %s: no info.pid (%v):\n%s", verb, id, err, out)
	}
	return v.Info.Pid
}

// writeJSON stores v as a JSON file in the test's directory.
func writeJSON(t *testing.T, name string, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func podConfig(t *testing.T, name string, hostNetwork bool) string {
	t.Helper()
	pod := map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "default", "uid": ctrtest.NewID("uid"), "attempt": 0},
		"log_directory": t.TempDir(),
		"linux":         map[string]any{},
	}
	if hostNetwork {
		// NODE: the pod asks for the host's network namespace.
		pod["linux"] = map[string]any{"security_context": map[string]any{"namespace_options": map[string]any{"network": 2}}}
	}
	return writeJSON(t, "pod.json", pod)
}

// procStatus returns /proc/<pid>/status.
func procStatus(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// assertConfined checks, from the host, the policy's identity,
// capabilities and no_new_privs on a process.
func assertConfined(t *testing.T, what string, pid int) {
	t.Helper()
	status := procStatus(t, pid)
	for _, want := range []string{"Uid:\t65534\t65534\t65534\t65534", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(status, want) {
			t.Errorf("%s (pid %d) lacks %q", what, pid, want)
		}
	}
}

func netns(t *testing.T, pid int) string {
	t.Helper()
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		t.Fatal(err)
	}
	return link
}

// interfaces lists the network interfaces of pid's namespace.
func interfaces(t *testing.T, pid int) []string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(data), "\n")[2:] {
		if name, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			names = append(names, name)
		}
	}
	return names
}

func leftoversGone(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		id := id
		var left []string
		if !ctrtest.Eventually(15*time.Second, func() bool {
			left = leftovers(t, id)
			return len(left) == 0
		}) {
			t.Errorf("%s left:\n%s", id, strings.Join(left, "\n"))
		}
	}
}

// leftovers is ctrtest.Leftovers under the CRI namespace's runtime root.
func leftovers(t *testing.T, id string) []string {
	var found []string
	for _, l := range ctrtest.Leftovers(t, id) {
		if !strings.HasPrefix(l, "bulkhead record") && !strings.HasPrefix(l, "state ") {
			found = append(found, l)
		}
	}
	root := ctrtest.RuntimeRootOf(criNamespace)
	out, _ := exec.Command(binaries.Bulkhead(t), "--root", root, "list", "--quiet").CombinedOutput()
	for _, line := range strings.Fields(string(out)) {
		if line == id {
			found = append(found, "bulkhead record "+id+" under "+root)
		}
	}
	if _, err := os.Stat(filepath.Join(root, id)); err == nil {
		found = append(found, "state "+filepath.Join(root, id))
	}
	return found
}

func sleep() { time.Sleep(100 * time.Millisecond) }

// assertProbeLog checks the probe's lines in a CRI log (each line is
// prefixed with a timestamp, the stream and a tag).
func assertProbeLog(t *testing.T, log string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if i := strings.Index(l, "{"); i >= 0 {
			lines = append(lines, l[i:])
		}
	}
	ctrtest.AssertProbePasses(t, strings.Join(lines, "\n"), 15)
}

// hostNetns is the test's own network namespace: the host's, the one a
// host-network pod asks for.
func hostNetns(t *testing.T) string {
	t.Helper()
	link, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return link
}
