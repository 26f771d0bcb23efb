package ctrtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/probeout"
)

// CRINamespace is the containerd namespace of the CRI plugin.
const CRINamespace = "k8s.io"

// InstallCrictl returns crictl, built once by hack/install-crictl.sh into
// its cache (/var/tmp/bulkhead-crictl, about 2 minutes cold).
func InstallCrictl() (string, error) {
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

// ImportPause builds the static pause program (test/cri/pause) and packs it
// as image name, the sandbox image of the CRI tests.
func (d *Daemon) ImportPause(name string) error {
	return d.ImportRootfs(name, []string{"/pause"}, func(rootfs string) error {
		cmd := exec.Command("go", "build", "-o", filepath.Join(rootfs, "pause"), "./test/cri/pause")
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build pause: %v\n%s", err, out)
		}
		return nil
	})
}

// CRI runs crictl against a containerd with the CRI plugin.
type CRI struct {
	Bin string
	D   *Daemon
	// Handler is the runtime handler pods ask for.
	Handler string
}

type criResult struct {
	args           []string
	stdout, stderr string
	err            error
}

func (r criResult) String() string {
	return fmt.Sprintf("crictl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.err, r.stdout, r.stderr)
}

func (c CRI) Run(args ...string) criResult {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	full := append([]string{"--runtime-endpoint", "unix://" + c.D.Address, "--image-endpoint", "unix://" + c.D.Address, "--timeout", "60s"}, args...)
	cmd := exec.CommandContext(ctx, c.Bin, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return criResult{args: args, stdout: stdout.String(), stderr: stderr.String(), err: err}
}

func (c CRI) Must(t *testing.T, args ...string) string {
	t.Helper()
	r := c.Run(args...)
	if r.err != nil {
		t.Fatalf("%s\ncontainerd log:\n%s", r, c.D.LogTail(15))
	}
	return strings.TrimSpace(r.stdout)
}

// infoPid reads info.pid from `crictl inspect[p] -o json`.
func (c CRI) InfoPid(t *testing.T, verb, id string) int {
	t.Helper()
	var v struct {
		Info struct {
			Pid int `json:"pid"`
		} `json:"info"`
	}
	out := c.Must(t, verb, "-o", "json", id)
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Info.Pid <= 0 {
		t.Fatalf("%s %s: no info.pid (%v):\n%s", verb, id, err, out)
	}
	return v.Info.Pid
}

// writeJSON stores v as a JSON file in the test's directory.
func WriteJSON(t *testing.T, name string, v any) string {
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

func PodConfig(t *testing.T, name string, hostNetwork bool) string {
	t.Helper()
	pod := map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "default", "uid": NewID("uid"), "attempt": 0},
		"log_directory": t.TempDir(),
		"linux":         map[string]any{},
	}
	if hostNetwork {
		// NODE: the pod asks for the host's network namespace.
		pod["linux"] = map[string]any{"security_context": map[string]any{"namespace_options": map[string]any{"network": 2}}}
	}
	return WriteJSON(t, "pod.json", pod)
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
func AssertConfined(t *testing.T, what string, pid int) {
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

func (c CRI) LeftoversGone(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		id := id
		var left []string
		if !engine.Eventually(15*time.Second, func() bool {
			left = criLeftovers(t, id)
			return len(left) == 0
		}) {
			t.Errorf("%s left:\n%s", id, strings.Join(left, "\n"))
		}
	}
}

// criLeftovers is Leftovers under the CRI namespace's runtime root.
func criLeftovers(t *testing.T, id string) []string {
	return leftoversUnder(t, RuntimeRootOf(CRINamespace), id)
}

// AssertProbeLog checks the probe's lines in a CRI log (each line is
// prefixed with a timestamp, the stream and a tag).
func AssertProbeLog(t *testing.T, log string, ws *probeout.Workspace) {
	t.Helper()
	probeout.AssertPasses(t, probeLines(log), ws)
}

// probeLines is the probe's JSON lines out of a CRI log (each line after
// its timestamp and stream).
func probeLines(log string) string {
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if i := strings.Index(l, "{"); i >= 0 {
			lines = append(lines, l[i:])
		}
	}
	return strings.Join(lines, "\n")
}

// removeProbe stops and removes a probe's container, which has ended by
// itself. The stop's timeout also bounds containerd's own request for the
// task to its shim, which on a loaded host took more than 2 s. A stop that
// meets the shim as it exits with its task ("ttrpc: closed", containerd
// 1.6) is asked again: the container ended, and the next stop finds it so.
func removeProbe(t *testing.T, c CRI, cid string) {
	t.Helper()
	var stop criResult
	if !engine.Eventually(30*time.Second, func() bool { stop = c.Run("stop", "--timeout", "30", cid); return stop.err == nil }) {
		t.Fatalf("%s", stop)
	}
	// The CRI plugin records the exit asynchronously: rm can race it.
	if !engine.Eventually(10*time.Second, func() bool { return c.Run("rm", cid).err == nil }) {
		t.Errorf("%s", c.Run("rm", cid))
	}
}

// hostNetns is the test's own network namespace: the host's, the one a
// host-network pod asks for.
func HostNetns(t *testing.T) string {
	t.Helper()
	link, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return link
}

// PodLifecycle: runp, create, start, exec, logs, stop, rm, stopp, rmp
// with handler bulkhead. The sandbox and the app both run under the
// policy, the app shares the sandbox's network namespace, and that
// namespace has loopback only (bulkhead replaced the one CNI set up with
// a new one); nothing is left after rmp.
func PodLifecycle(t *testing.T, c CRI) {
	pod := PodConfig(t, "bh-pod", false)
	podID := c.Must(t, "runp", "--runtime", c.Handler, pod)
	t.Cleanup(func() {
		c.Run("stopp", podID)
		c.Run("rmp", "--force", podID)
	})
	pausePid := c.InfoPid(t, "inspectp", podID)
	AssertConfined(t, "pod sandbox", pausePid)

	ctr := WriteJSON(t, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "app"},
		"image":    map[string]any{"image": "docker.io/library/bulkhead-test:latest"},
		"command":  []string{"sh", "-c", "echo hello-from-app; exec sleep 3600"},
		"log_path": "app.log",
		"linux":    map[string]any{},
	})
	cid := c.Must(t, "create", podID, ctr, pod)
	c.Must(t, "start", cid)
	appPid := c.InfoPid(t, "inspect", cid)
	AssertConfined(t, "app container", appPid)

	if got, want := netns(t, appPid), netns(t, pausePid); got != want {
		t.Errorf("app netns %s, pod sandbox netns %s: the app does not share the pod's network", got, want)
	}
	if netns(t, pausePid) == HostNetns(t) {
		t.Errorf("the pod runs in the host's network namespace")
	}
	if ifs := interfaces(t, pausePid); len(ifs) != 1 || ifs[0] != "lo" {
		t.Errorf("pod network namespace has %v, want loopback only", ifs)
	}

	if out := c.Must(t, "exec", cid, "id", "-u"); out != "65534" {
		t.Errorf("crictl exec id -u = %q, want 65534", out)
	}
	r := c.Run("exec", cid, "sh", "-c", "cat /proc/self/status | grep CapEff")
	if !strings.Contains(r.stdout, "0000000000000000") {
		t.Errorf("exec'd process has capabilities:\n%s", r)
	}
	// Container stats come from the shim's cgroup metrics (what the
	// kubelet reads).
	if out := c.Must(t, "stats", "-o", "json", cid); !strings.Contains(out, "workingSetBytes") {
		t.Errorf("crictl stats has no memory: %s", out)
	}
	if out := c.Must(t, "logs", cid); !strings.Contains(out, "hello-from-app") {
		t.Errorf("crictl logs: %q", out)
	}

	c.Must(t, "stop", "--timeout", "2", cid)
	// The CRI plugin records the exit asynchronously, and a stop whose
	// wait ran out as the task was deleted returns before it has: rm can
	// race it. The container must be seen exited, then removed.
	var state string
	if !engine.Eventually(30*time.Second, func() bool {
		state = c.Run("inspect", "-o", "go-template", "--template", "{{.status.state}}", cid).stdout
		return strings.TrimSpace(state) == "CONTAINER_EXITED"
	}) {
		t.Fatalf("the stopped container is not seen exited: state %q\ncontainerd log:\n%s", state, c.D.LogTail(20))
	}
	c.Must(t, "rm", cid)
	c.Must(t, "stopp", podID)
	c.Must(t, "rmp", podID)
	c.LeftoversGone(t, cid, podID)
}

// PodProbe: bulkhead-probe runs and passes every control as the app
// container of a pod, a host folder bound at /workspace.
func PodProbe(t *testing.T, c CRI) {
	pod := PodConfig(t, "bh-probe", false)
	ws := probeout.NewWorkspace(t)
	podID := c.Must(t, "runp", "--runtime", c.Handler, pod)
	t.Cleanup(func() {
		c.Run("stopp", podID)
		c.Run("rmp", "--force", podID)
	})
	var cid string
	out := probeout.UntilEvidence(t, ws, func(attempt int) string {
		if cid != "" {
			removeProbe(t, c, cid)
		}
		ctr := WriteJSON(t, "ctr.json", map[string]any{
			"metadata": map[string]any{"name": "probe", "attempt": attempt},
			"image":    map[string]any{"image": "docker.io/library/bulkhead-test:latest"},
			"command":  []string{"bulkhead-probe"},
			"log_path": fmt.Sprintf("probe-%d.log", attempt),
			"mounts":   []any{map[string]any{"container_path": "/workspace", "host_path": ws.Dir}},
			"linux":    map[string]any{},
		})
		cid = c.Must(t, "create", podID, ctr, pod)
		c.Must(t, "start", cid)
		// The cpu control may spin up to 40 s on a loaded host.
		var out string
		for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			out = c.Run("logs", cid).stdout
			if strings.Contains(out, `"control":"done"`) {
				break
			}
		}
		return probeLines(out)
	})
	AssertProbeLog(t, out, ws)
	removeProbe(t, c, cid)
	c.Must(t, "stopp", podID)
	c.Must(t, "rmp", podID)
	c.LeftoversGone(t, cid, podID)
}

// HostNetworkPod: a pod that asks for the host's network is refused,
// naming the field, and leaves nothing. It once got a loopback-only
// namespace of its own, while containerd went on serving the pod in the
// host's: port-forward reached the host's loopback services.
func HostNetworkPod(t *testing.T, c CRI) {
	pod := PodConfig(t, "bh-hostnet", true)
	r := c.Run("runp", "--runtime", c.Handler, pod)
	if r.err == nil {
		podID := strings.TrimSpace(r.stdout)
		c.Run("stopp", podID)
		c.Run("rmp", "--force", podID)
		t.Fatalf("a host-network pod ran, which containerd serves in the host's network namespace:\n%s", r)
	}
	if !strings.Contains(r.stderr, "hostNetwork") {
		t.Errorf("the refusal does not say to drop hostNetwork:\n%s", r)
	}
	if left := strings.TrimSpace(c.Run("pods", "--name", "bh-hostnet", "-q").stdout); left != "" {
		t.Errorf("the refused pod is still listed: %s", left)
		c.LeftoversGone(t, strings.Fields(left)...)
	}
}

// WriteCNIConfig writes a CNI config directory below dir and returns it:
// containerd refuses a pod whose eth0 has no address, so sandboxes get one
// from a bridge of their own and a private range (bulkhead then gives the
// pod a new network namespace with loopback only). Test packages that run
// at the same time use different bridges and ranges; DeleteBridge removes
// the bridge afterwards.
func WriteCNIConfig(dir, bridge, subnet string) (string, error) {
	conf := filepath.Join(dir, "cni")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return "", err
	}
	list := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "bulkhead-test",
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": bridge, "isGateway": false, "ipMasq": false,
			"ipam": map[string]any{"type": "host-local", "ranges": [][]map[string]string{{{"subnet": subnet}}}, "dataDir": filepath.Join(dir, "ipam")},
		}},
	}
	data, err := json.Marshal(list)
	if err != nil {
		return "", err
	}
	return conf, os.WriteFile(filepath.Join(conf, "10-bulkhead-test.conflist"), data, 0o644)
}

// DeleteBridge removes a bridge WriteCNIConfig's network made.
func DeleteBridge(bridge string) { _ = exec.Command("ip", "link", "del", bridge).Run() }

// EnsureCNIPlugins installs containernetworking-plugins when the bridge
// plugin is missing.
func EnsureCNIPlugins() error {
	if _, err := os.Stat("/usr/lib/cni/bridge"); err == nil {
		return nil
	}
	out, err := exec.Command("bash", filepath.Join(repoRoot(), "hack", "install-deps.sh"), "containernetworking-plugins").CombinedOutput()
	if err != nil {
		return fmt.Errorf("install containernetworking-plugins: %v\n%s", err, out)
	}
	return nil
}

// InstallHandler runs `bulkhead install containerd` on config.toml.
func InstallHandler(t testing.TB, config string, version int) error {
	out, err := exec.Command(binaries.Bulkhead(t), "install", "containerd", "--config", config, "--config-version", fmt.Sprint(version), "--force").CombinedOutput()
	if err != nil {
		return fmt.Errorf("bulkhead install containerd: %v\n%s", err, out)
	}
	return nil
}

// StartCRI starts a private containerd with the CRI plugin on (config
// renders its config.toml, with the bulkhead handler), checks crictl
// reaches it and imports the probe image in the CRI namespace. The
// returned CRI's D is set whenever a daemon was started, for Close.
func StartCRI(t testing.TB, containerd, ctr string, config func(dir, address string) (string, error)) (CRI, error) {
	if err := EnsureCNIPlugins(); err != nil {
		return CRI{}, err
	}
	bin, err := InstallCrictl()
	if err != nil {
		return CRI{}, err
	}
	var configErr error
	c, err := engine.StartContainerdConfig(engine.ContainerdConfigOptions{
		Binary: containerd,
		Config: func(dir, address string) string {
			text, err := config(dir, address)
			configErr = err
			return text
		},
	})
	if configErr != nil {
		if c != nil {
			_ = c.Close()
		}
		return CRI{}, configErr
	}
	if err != nil {
		return CRI{}, err
	}
	cri := CRI{Bin: bin, D: &Daemon{Containerd: c, Ctr: ctr, NS: CRINamespace}}
	Serves(CRINamespace, cri.D)
	if r := cri.Run("version"); r.err != nil {
		return cri, fmt.Errorf("the CRI plugin does not answer: %s\ncontainerd log:\n%s", r, cri.D.LogTail(10))
	}
	return cri, cri.D.ImportProbeImage(t)
}

// PodRefusal: an app container that mounts the host's /root is refused by
// bulkhead, crictl shows the rule, the pod keeps running, and nothing of
// the refused container is left.
func PodRefusal(t *testing.T, c CRI) {
	pod, podID := c.runPod(t, "bh-refused", c.Handler)
	ctr := WriteJSON(t, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "home"},
		"image":    map[string]any{"image": Image},
		"command":  []string{"true"},
		"mounts":   []map[string]any{{"container_path": "/x", "host_path": "/root", "readonly": true}},
		"log_path": "home.log",
		"linux":    map[string]any{},
	})
	r := c.Run("create", podID, ctr, pod)
	var cid string
	if r.err == nil {
		// CRI creates the container record first; the runtime runs at start.
		cid = strings.TrimSpace(r.stdout)
		r = c.Run("start", cid)
	}
	if r.err == nil {
		t.Fatalf("a bind of /root started:\n%s", r)
	}
	t.Logf("%s: %s", r.args[0], lastLine(r.stderr))
	if !strings.Contains(r.stderr, "bulkhead") || !strings.Contains(r.stderr, "rule host_mounts") {
		t.Errorf("the error does not name bulkhead's rule:\n%s", r)
	}
	pausePid := c.InfoPid(t, "inspectp", podID)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pausePid)); err != nil {
		t.Errorf("the pod sandbox died with the refused container: %v", err)
	}
	if cid != "" {
		c.Must(t, "rm", cid)
		c.LeftoversGone(t, cid)
	}
	c.Must(t, "stopp", podID)
	c.Must(t, "rmp", podID)
	c.LeftoversGone(t, podID)
}

// runPod runs a pod named name under the runtime handler, removed when
// the test ends, and returns its config and id.
func (c CRI) runPod(t *testing.T, name, handler string) (config, id string) {
	t.Helper()
	config = PodConfig(t, name, false)
	id = c.Must(t, "runp", "--runtime", handler, config)
	t.Cleanup(func() {
		c.Run("stopp", id)
		c.Run("rmp", "--force", id)
	})
	return config, id
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// GVisorRuncShimHandler is a CRI handler an administrator may set up by
// hand (install containerd writes none): containerd's runc shim with
// BinaryName bulkhead-runsc. Not named bulkhead-runsc, which install
// would take for an earlier install's and remove.
const GVisorRuncShimHandler = "runsc-runc-shim"

// GVisorRuncShimHandlerConfig3 is its table for a version 3 config
// (containerd 2.x).
func GVisorRuncShimHandlerConfig3(t testing.TB) string {
	return runcShimHandlerTable(`'io.containerd.cri.v1.runtime'.containerd`, GVisorRuncShimHandler, filepath.Join(binaries.Dir(t), "bulkhead-runsc"))
}

// GVisorPodMemberRefused: a container of a pod on GVisorRuncShimHandler
// is refused when it is created, by name, and the pod is then stopped and
// removed as any other. containerd's runc task service,
// which bulkhead's shim is, hands start its own output as one pipe, which
// runsc would keep as the container's for its life, so bulkhead refuses
// such a start; a container refused only there stayed "created", which
// runsc never signals, and the pod could not be removed.
func GVisorPodMemberRefused(t *testing.T, c CRI) {
	pod, podID := c.runPod(t, "bh-gvisor-member", GVisorRuncShimHandler)
	ctr := WriteJSON(t, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "member"},
		"image":    map[string]any{"image": Image},
		"command":  []string{"true"},
		"log_path": "member.log",
		// A pid namespace of its own (CONTAINER): one shared with the
		// pod (POD) is refused on runsc by the namespace rule.
		"linux": map[string]any{"security_context": map[string]any{"namespace_options": map[string]any{"pid": 1}}},
	})
	cid := c.Must(t, "create", podID, ctr, pod)
	// CRI creates the runtime's container at start: the task's create is
	// to fail, not its start, which would leave it created.
	r := c.Run("start", cid)
	if r.err == nil {
		t.Fatalf("a container of a gVisor pod started through bulkhead's shim:\n%s", r)
	}
	if !strings.Contains(r.stderr, "failed to create shim task") || !strings.Contains(r.stderr, "gVisor's own shim") {
		t.Errorf("want the container's task refused at create, naming gVisor's shim:\n%s", r)
	}
	c.Must(t, "rm", cid)
	c.Must(t, "stopp", podID)
	c.Must(t, "rmp", podID)
	c.LeftoversGone(t, cid, podID)
}
