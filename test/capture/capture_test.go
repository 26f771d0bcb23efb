// Package capture runs a representative container through each real
// engine (dockerd, containerd's ctr, containerd's CRI plugin driven by
// crictl) under a "capture" runtime: a shell script that copies the
// bundle's config.json aside at create and then execs runc, so the
// container runs normally. The captured specs are normalised (ids, bundle
// and temporary paths, pids, hostname, random tokens become placeholders)
// and go through specs.Apply with the default profile; the decisions are
// compared with a golden file and the rewritten spec must pass
// specs.CheckInvariants.
//
// Files in testdata (both written by `go test ./test/capture -update`):
//   - <case>.decisions.golden.json: rule, field, action and layer of every
//     decision. A difference fails the test: it is what bulkhead would do
//     to what the engine sends.
//   - <case>.spec.json: the normalised config.json the engine sent, for a
//     reviewer to see. A difference is only logged: engines change details
//     (default mounts, capability sets, annotations) between versions, and
//     what matters for the policy is already held by the decisions golden
//     and the explicit checks below.
package capture

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/ctrtest"
	"bulkhead.dev/bulkhead/test/engine"
)

var update = flag.Bool("update", false, "rewrite testdata/*.decisions.golden.json and testdata/*.spec.json")

const (
	pauseImage = "bulkhead.dev/pause:capture"
	criBridge  = "bhcap16"
	criSubnet  = "10.250.96.0/24"
	// criHandler is the CRI runtime handler whose BinaryName is the script.
	criHandler = "capture"
	// ctrNamespace keeps the runc state of these containers apart
	// (runc's shim keeps it in /run/containerd/runc/<namespace>).
	ctrNamespace = "bulkhead-capture"
	marker       = "capture-marker"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: private engines are started")
	}
}

// captureScript is the runtime the engines call. At create it copies
// config.json from the bundle (--bundle, else the working directory) to
// DIR/<id>/ with the bundle path and the argv; every verb then execs runc.
const captureScript = `#!/bin/sh
dir=%q
runc=%q
create= bundle= prev= last=
for a in "$@"; do
	case "$prev" in --bundle|-b) bundle=$a ;; esac
	case "$a" in
	create) [ -z "$create" ] && create=1 ;;
	--bundle=*) bundle=${a#--bundle=} ;;
	esac
	prev=$a
	last=$a
done
if [ -n "$create" ]; then
	[ -n "$bundle" ] || bundle=$(pwd)
	mkdir -p "$dir/$last"
	cp "$bundle/config.json" "$dir/$last/config.json"
	printf '%%s\n' "$bundle" >"$dir/$last/bundle"
	printf '%%s\n' "$*" >"$dir/$last/argv"
fi
exec "$runc" "$@"
`

// writeScript writes the capture runtime into a new temporary directory
// and returns its path and the directory captures go to.
func writeScript(t *testing.T) (script, dir string) {
	t.Helper()
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Skipf("runc is not installed: %v", err)
	}
	tmp := t.TempDir()
	dir = filepath.Join(tmp, "captured")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(tmp, "capture-runtime")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(captureScript, dir, runc)), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, dir
}

// capture is one config.json the script recorded.
type capture struct {
	ID     string
	Dir    string // bundle-like: holds config.json
	Bundle string // the engine's bundle
	Data   []byte
}

func readCapture(t *testing.T, dir, id string) capture {
	t.Helper()
	c := capture{ID: id, Dir: filepath.Join(dir, id)}
	var err error
	if c.Data, err = os.ReadFile(filepath.Join(c.Dir, "config.json")); err != nil {
		t.Fatalf("the capture runtime recorded no create of %s: %v", id, err)
	}
	b, _ := os.ReadFile(filepath.Join(c.Dir, "bundle"))
	c.Bundle = strings.TrimSpace(string(b))
	argv, _ := os.ReadFile(filepath.Join(c.Dir, "argv"))
	t.Logf("%s: runtime called with: %s", id, strings.TrimSpace(string(argv)))
	return c
}

// onlyCapture returns the one capture in dir.
func onlyCapture(t *testing.T, dir string) capture {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("want one capture in %s, have %d (%v)", dir, len(ents), err)
	}
	return readCapture(t, dir, ents[0].Name())
}

// normaliser turns what varies between runs into placeholders: exact
// strings first, in order (longest first where one contains another),
// then patterns.
type normaliser struct{ pairs []string }

func (n *normaliser) add(from, to string) {
	if from != "" {
		n.pairs = append(n.pairs, from, to)
	}
}

var patterns = []struct {
	re *regexp.Regexp
	to string
}{
	{regexp.MustCompile(`/proc/[0-9]+/`), "/proc/<pid>/"},
	{regexp.MustCompile(`cni-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "cni-<uuid>"},
	{regexp.MustCompile(`[0-9a-f]{64}`), "<hex64>"},
	{regexp.MustCompile(`bh-[a-z]+-[0-9]+-[0-9]+`), "<ctrtest-id>"},
}

func (n *normaliser) String(s string) string {
	for i := 0; i < len(n.pairs); i += 2 {
		s = strings.ReplaceAll(s, n.pairs[i], n.pairs[i+1])
	}
	for _, p := range patterns {
		s = p.re.ReplaceAllString(s, p.to)
	}
	return s
}

// Spec re-indents a config.json (keys sorted) with placeholders.
func (n *normaliser) Spec(t *testing.T, data []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(n.String(string(out))), '\n')
}

// decision is the part of a specs.Decision the golden file holds; before
// and after carry engine-version detail (capability lists, option order).
type decision struct {
	Rule   string       `json:"rule"`
	Field  string       `json:"field"`
	Action specs.Action `json:"action"`
	Layer  specs.Layer  `json:"layer"`
}

// check applies the default profile to a capture, compares the decisions
// with the golden file, checks the invariants and returns the rewritten
// spec for the caller's own checks. joinable lists pids whose /proc/<pid>/ns
// paths belong to a pod sandbox.
func check(t *testing.T, name string, c capture, n *normaliser, joinable ...int) (*rspec.Spec, []specs.Decision) {
	t.Helper()
	n.add(c.Bundle, "<bundle>")
	n.add(c.ID, "<id>")
	if len(c.ID) >= 12 {
		n.add(c.ID[:12], "<id12>")
	}
	// CRI pods without a hostname get the node's; short names ("vm")
	// are only replaced where a hostname stands.
	if h, err := os.Hostname(); err == nil && h != "" {
		n.add(`"hostname": "`+h+`"`, `"hostname": "<hostname>"`)
		n.add(`"HOSTNAME=`+h+`"`, `"HOSTNAME=<hostname>"`)
	}
	norm := n.Spec(t, c.Data)
	writeOrCompare(t, filepath.Join("testdata", name+".spec.json"), norm, false)

	in, err := specs.DecodeLenient(c.Data)
	if err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
	p := specs.DefaultProfile()
	// The capture is judged after the engine ran and removed the container:
	// its cgroup then held its own processes and dockerd's layer record is
	// gone, and so is the task's bundle whose work link tied the engine's
	// per-container files to the engine that made the task. These facts
	// are read as create saw them; test/policy, test/docker and
	// test/containerd2 judge them on the live host.
	// The engine's bundle (c.Bundle) is where it made it; its state
	// directory still holds the layout that says whose.
	ctx := &specs.Context{Profile: &p, Bundle: c.Dir, Original: c.Data, ID: c.ID, MadeByCRI: func() bool { return specs.CRIBundle(c.Bundle) },
		CgroupTaken:     func(string) (bool, error) { return false, nil },
		CgroupPopulated: func(string) (bool, error) { return false, nil },
		Host: &specs.Host{DockerMountID: func(_, id string) (string, error) {
			return dockerLayer(in.Root.Path), nil
		}, EngineTask: func(string, string) bool { return true }}}
	if len(joinable) > 0 {
		// The captured pod's sandbox ran through the capture runtime, not
		// bulkhead: stand in for the registry, as for its namespaces.
		ctx.JoinableSandbox = func(string) bool { return true }
		ctx.KubeletPod = func(string) bool { return true }
		ctx.JoinableNamespace = func(_ rspec.LinuxNamespaceType, path string) bool {
			for _, pid := range joinable {
				if strings.HasPrefix(path, fmt.Sprintf("/proc/%d/ns/", pid)) {
					return true
				}
			}
			return false
		}
	}
	out, ds, err := specs.Apply(ctx, in)
	var golden []decision
	for _, d := range ds {
		golden = append(golden, decision{Rule: d.Rule, Field: n.String(d.Field), Action: d.Action, Layer: d.Layer})
	}
	data, jerr := json.MarshalIndent(golden, "", "\t")
	if jerr != nil {
		t.Fatal(jerr)
	}
	writeOrCompare(t, filepath.Join("testdata", name+".decisions.golden.json"), append(data, '\n'), true)
	if err != nil {
		t.Fatalf("%s: the default profile refuses what the engine sends: %v", name, err)
	}
	if ctx.JoinableNamespace == nil {
		err = specs.CheckInvariants(&p, out)
	} else {
		err = specs.CheckInvariantsContext(ctx, out)
	}
	if err != nil {
		t.Errorf("%s: the rewritten spec breaks the policy: %v", name, err)
	}
	return out, ds
}

// writeOrCompare writes want under -update; otherwise a difference fails
// the test when strict, and is logged when not.
func writeOrCompare(t *testing.T, path string, got []byte, strict bool) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	switch {
	case err != nil && strict:
		t.Fatalf("%v (run go test ./test/capture -update)", err)
	case err != nil:
		t.Logf("%v (run go test ./test/capture -update)", err)
	case bytes.Equal(got, want):
	case strict:
		t.Errorf("decisions differ from %s (run go test ./test/capture -update and review the diff); got:\n%s", path, got)
	default:
		t.Logf("NOTE: the engine's spec differs from %s (engine version drift; the decisions golden decides). -update rewrites it.", path)
	}
}

// wantDecision requires a decision with this rule, field and action.
func wantDecision(t *testing.T, ds []specs.Decision, rule, field string, actions ...specs.Action) {
	t.Helper()
	for _, d := range ds {
		if d.Rule == rule && d.Field == field {
			for _, a := range actions {
				if d.Action == a {
					return
				}
			}
			t.Errorf("%s %s: %s, want one of %v (%s -> %s)", rule, field, d.Action, actions, d.Before, d.After)
			return
		}
	}
	t.Errorf("no %s decision on %s", rule, field)
}

// commonChecks: what every engine's representative container must come
// out with. dataDst is the destination of the test's bind.
func commonChecks(t *testing.T, out *rspec.Spec, ds []specs.Decision, dataDst string) {
	t.Helper()
	for _, e := range out.Process.Env {
		if strings.HasPrefix(e, "GITHUB_TOKEN=") {
			t.Errorf("GITHUB_TOKEN survives: %s", e)
		}
	}
	wantDecision(t, ds, "environment", "process.env[GITHUB_TOKEN]", specs.Removed)
	if c := out.Process.Capabilities; c != nil {
		for _, set := range [][]string{c.Bounding, c.Effective, c.Permitted, c.Inheritable, c.Ambient} {
			for _, cp := range set {
				if cp == "CAP_NET_ADMIN" {
					t.Errorf("CAP_NET_ADMIN survives: %+v", c)
				}
			}
		}
	}
	found := false
	for _, m := range out.Mounts {
		if m.Destination == dataDst {
			found = true
			if !hasOpt(m.Options, "ro") || hasOpt(m.Options, "rw") {
				t.Errorf("the bind at %s is not read-only: %v", dataDst, m.Options)
			}
		}
		if strings.HasPrefix(m.Destination, "/etc/") && (m.Type == "bind" || hasOpt(m.Options, "bind") || hasOpt(m.Options, "rbind")) {
			if !hasOpt(m.Options, "ro") || hasOpt(m.Options, "rw") {
				t.Errorf("the engine's %s bind is not read-only: %v", m.Destination, m.Options)
			}
		}
	}
	if !found {
		t.Errorf("the bind at %s is gone", dataDst)
	}
}

func hasOpt(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

// dataDir is the host directory the representative container binds.
func dataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte(marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDocker: docker run under the capture runtime, registered in
// daemon.json.
func TestDocker(t *testing.T) {
	needRoot(t)
	t.Parallel()
	script, dir := writeScript(t)
	d := engine.NewDocker(t, engine.DockerOptions{Runtimes: map[string]engine.Runtime{"capture": {Path: script}}})
	rootfs := t.TempDir()
	if err := bundle.Rootfs(rootfs); err != nil {
		t.Fatal(err)
	}
	if err := d.Import(rootfs, "bulkhead-capture:latest"); err != nil {
		t.Fatal(err)
	}
	data := dataDir(t)
	out := d.Must(t, "run", "--rm", "--runtime", "capture", "-v", data+":/data", "-e", "GITHUB_TOKEN=x",
		"--cap-add", "NET_ADMIN", "bulkhead-capture:latest", "cat", "/data/marker")
	if out != marker {
		t.Errorf("the container did not run normally: %q", out)
	}
	c := onlyCapture(t, dir)
	n := &normaliser{}
	// The libnetwork-setkey hook ends with the network controller's short
	// id, new at every dockerd start.
	var raw rspec.Spec
	if err := json.Unmarshal(c.Data, &raw); err == nil && raw.Hooks != nil {
		//lint:ignore SA1019 dockerd's hook is a prestart hook
		for _, h := range raw.Hooks.Prestart {
			if len(h.Args) > 0 && strings.Contains(strings.Join(h.Args, " "), "libnetwork-setkey") {
				n.add(`"`+h.Args[len(h.Args)-1]+`"`, `"<network-controller-id>"`)
			}
		}
	}
	n.add(d.Dir, "<docker-dir>")
	n.add(data, "<data>")
	n.add(filepath.Dir(script), "<capture-dir>")
	spec, ds := check(t, "docker-run", c, n)
	commonChecks(t, spec, ds, "/data")
	for _, f := range []string{"mounts[/etc/hosts]", "mounts[/etc/hostname]", "mounts[/etc/resolv.conf]"} {
		wantDecision(t, ds, "host_mounts", f, specs.Kept, specs.Tightened)
	}
	wantDecision(t, ds, "hooks", "hooks.prestart[0]", specs.Removed)
	if spec.Hooks != nil {
		//lint:ignore SA1019 dockerd still sends a prestart hook; it must be gone
		if pre := spec.Hooks.Prestart; len(pre) > 0 {
			t.Errorf("prestart hooks survive: %+v", pre)
		}
	}
}

// TestCtr: ctr run with the runc shim and --runc-binary the capture
// script.
func TestCtr(t *testing.T) {
	needRoot(t)
	t.Parallel()
	script, dir := writeScript(t)
	c := engine.NewContainerd(t, engine.ContainerdOptions{})
	d := &ctrtest.Daemon{Containerd: c, Ctr: "ctr", NS: ctrNamespace}
	if err := d.ImportRootfs(ctrtest.Image, nil, nil); err != nil {
		t.Fatal(err)
	}
	data := dataDir(t)
	id := ctrtest.NewID("capture")
	out := d.Must(t, "run", "--rm", "--runtime", "io.containerd.runc.v2", "--runc-binary", script,
		"--mount", "type=bind,src="+data+",dst=/data,options=rbind:rw", "--env", "GITHUB_TOKEN=x",
		"--cap-add", "CAP_NET_ADMIN", ctrtest.Image, id, "cat", "/data/marker")
	if strings.TrimSpace(out) != marker {
		t.Errorf("the container did not run normally: %q", out)
	}
	cp := readCapture(t, dir, id)
	n := &normaliser{}
	n.add(c.Dir, "<containerd-dir>")
	n.add(data, "<data>")
	spec, ds := check(t, "ctr-run", cp, n)
	commonChecks(t, spec, ds, "/data")
}

// criConfig is containerd 1.6's config with the CRI plugin and the
// capture handler: the runc shim with BinaryName the script.
func criConfig(dir, address, script string) (string, error) {
	cniConf, err := ctrtest.WriteCNIConfig(dir, criBridge, criSubnet)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`version = 2
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # the pause container asks for oom_score_adj -998
  restrict_oom_score_adj = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]
        BinaryName = %q

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), address, address+".ttrpc",
		filepath.Join(dir, "opt"), pauseImage, criHandler, criHandler, script, cniConf), nil
}

// crictl returns crictl: on PATH, in hack/install-crictl.sh's cache, or
// built by it; "" when it cannot be had.
func crictl(t *testing.T) string {
	if p, err := exec.LookPath("crictl"); err == nil {
		return p
	}
	p, err := ctrtest.InstallCrictl()
	if err != nil {
		t.Logf("crictl: %v", err)
		return ""
	}
	return p
}

// TestCRI: a pod and an app container through the CRI plugin and
// crictl, with handler capture. Both the sandbox's and the app's specs
// are captured.
func TestCRI(t *testing.T) {
	needRoot(t)
	t.Parallel()
	bin := crictl(t)
	if bin == "" {
		t.Skip("crictl is absent and hack/install-crictl.sh could not build it: the CRI path is not captured")
	}
	if err := ctrtest.EnsureCNIPlugins(); err != nil {
		t.Skipf("no CNI plugins for the pod network: %v", err)
	}
	script, dir := writeScript(t)
	var cfgErr error
	ctrd, err := engine.StartContainerdConfig(engine.ContainerdConfigOptions{
		Binary: "/usr/bin/containerd",
		Config: func(d, address string) string {
			s, err := criConfig(d, address, script)
			cfgErr = err
			return s
		},
	})
	if ctrd != nil {
		t.Cleanup(func() {
			if err := ctrd.Close(); err != nil {
				t.Error(err)
			}
			ctrtest.DeleteBridge(criBridge)
		})
	}
	if cfgErr != nil {
		t.Fatal(cfgErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	cri := ctrtest.CRI{Bin: bin, D: &ctrtest.Daemon{Containerd: ctrd, Ctr: "ctr", NS: ctrtest.CRINamespace}, Handler: criHandler}
	cri.Must(t, "version")
	if err := cri.D.ImportRootfs(ctrtest.Image, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := cri.D.ImportPause(pauseImage); err != nil {
		t.Fatal(err)
	}

	logs := t.TempDir()
	pod := ctrtest.WriteJSON(t, "pod.json", map[string]any{
		"metadata":      map[string]any{"name": "capture", "namespace": "default", "uid": "capture-uid", "attempt": 0},
		"log_directory": logs,
		"linux":         map[string]any{},
	})
	podID := cri.Must(t, "runp", "--runtime", criHandler, pod)
	t.Cleanup(func() {
		cri.Run("stopp", podID)
		cri.Run("rmp", "--force", podID)
	})
	pausePid := cri.InfoPid(t, "inspectp", podID)
	data := dataDir(t)
	ctr := ctrtest.WriteJSON(t, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "app"},
		"image":    map[string]any{"image": ctrtest.Image},
		"command":  []string{"sh", "-c", "cat /data/marker; exec sleep 60"},
		"envs":     []map[string]string{{"key": "GITHUB_TOKEN", "value": "x"}},
		"mounts":   []map[string]any{{"container_path": "/data", "host_path": data}},
		"log_path": "app.log",
		"linux": map[string]any{"security_context": map[string]any{
			"capabilities": map[string]any{"add_capabilities": []string{"NET_ADMIN"}}}},
	})
	cid := cri.Must(t, "create", podID, ctr, pod)
	cri.Must(t, "start", cid)
	if !engine.Eventually(10*time.Second, func() bool {
		return strings.Contains(cri.Run("logs", cid).String(), marker)
	}) {
		t.Errorf("the app did not run normally: %s", cri.Run("logs", cid))
	}

	n := &normaliser{}
	n.add(ctrd.Dir, "<containerd-dir>")
	n.add(data, "<data>")
	n.add(logs, "<log-dir>")
	n.add(podID, "<sandbox-id>")
	n.add(cid, "<app-id>")

	sandbox := readCapture(t, dir, podID)
	spec, ds := check(t, "cri-sandbox", sandbox, n)
	if spec != nil && spec.Process.User.UID != 65534 {
		t.Errorf("the sandbox runs as uid %d", spec.Process.User.UID)
	}
	for _, d := range ds {
		if d.Rule == "host_mounts" && d.Action != specs.Kept && d.Action != specs.Tightened {
			t.Errorf("sandbox: %+v", d)
		}
	}

	app := readCapture(t, dir, cid)
	spec, ds = check(t, "cri-app", app, n, pausePid)
	commonChecks(t, spec, ds, "/data")
	for _, f := range []string{"mounts[/etc/hosts]", "mounts[/etc/hostname]", "mounts[/etc/resolv.conf]", "mounts[/dev/shm]"} {
		wantDecision(t, ds, "host_mounts", f, specs.Kept, specs.Tightened)
	}
	var joined []string
	for _, ns := range spec.Linux.Namespaces {
		if ns.Path != "" {
			joined = append(joined, string(ns.Type)+"="+ns.Path)
		}
	}
	sort.Strings(joined)
	t.Logf("app joins %v (sandbox pid %d)", joined, pausePid)

	cri.Must(t, "stop", "--timeout", "1", cid)
	cri.Must(t, "rm", "--force", cid)
	cri.Must(t, "stopp", podID)
	cri.Must(t, "rmp", podID)
}

// dockerLayer is the layer id in dockerd's <data-root>/overlay2/<layer>/merged.
func dockerLayer(root string) string {
	return filepath.Base(filepath.Dir(root))
}
