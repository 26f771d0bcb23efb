package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Runtime is one entry of daemon.json's runtimes.
type Runtime struct {
	Path string   `json:"path"`
	Args []string `json:"runtimeArgs,omitempty"`
}

// DockerOptions tune a private dockerd.
type DockerOptions struct {
	// Runtimes are written to the daemon.json the harness creates.
	Runtimes map[string]Runtime
	// StorageDriver: "" picks overlay2, or vfs where the temporary
	// directory is itself on overlayfs (overlay cannot stack on it).
	// $BULKHEAD_TEST_STORAGE_DRIVER overrides both.
	StorageDriver string
	// NoBridge starts dockerd with --bridge=none. Otherwise the harness
	// makes a private bridge (not docker0) for the default network, so a
	// container gets a veth as it would on a real host.
	NoBridge bool
}

// Docker is a private dockerd, started the way a plain `dockerd` on a
// Debian host runs: it starts and manages its own containerd, and its exec
// root is reached through a symlink, as /var/run/docker is through
// /var/run -> /run. Runtimes then get a --root whose spelling differs from
// the one /proc/self/mountinfo shows. Nothing of it is shared with a host
// dockerd: data root, exec root, pid file, sockets, daemon.json and bridge
// are its own.
type Docker struct {
	Dir        string // everything lives here
	Socket     string // dockerd's API socket
	Host       string // DOCKER_HOST value: unix://Socket
	DataRoot   string
	ExecRoot   string // <Dir>/var/run/docker, where <Dir>/var/run -> ../run
	ConfigFile string // the daemon.json dockerd reads (SIGHUP reloads it)
	PidFile    string
	Log        string // dockerd's log, with its containerd's
	Bridge     string // "" with NoBridge
	Storage    string // the storage driver in use

	// ContainerdAddress is the socket of the containerd dockerd started.
	ContainerdAddress string

	proc *process
	argv []string
	cids atomic.Int64 // cidfiles the harness named
	mu   sync.Mutex
	made map[testing.TB][]string // containers each running test made
}

// StartDocker starts containerd and dockerd and waits until dockerd's API
// answers. The caller must Close it; on error nothing is left running.
func StartDocker(opts DockerOptions) (d *Docker, err error) {
	if err := Ensure(map[string]string{"dockerd": "docker.io", "containerd": "docker.io", "docker": "docker.io"}); err != nil {
		return nil, err
	}
	dir, err := tempDir("bh-dkr-")
	if err != nil {
		return nil, err
	}
	d = &Docker{
		Dir:        dir,
		Socket:     filepath.Join(dir, "docker.sock"),
		DataRoot:   filepath.Join(dir, "data"),
		ExecRoot:   filepath.Join(dir, "var", "run", "docker"),
		ConfigFile: filepath.Join(dir, "daemon.json"),
		PidFile:    filepath.Join(dir, "docker.pid"),
		Log:        filepath.Join(dir, "dockerd.log"),
	}
	d.Host = "unix://" + d.Socket
	d.ContainerdAddress = filepath.Join(d.ExecRoot, "containerd", "containerd.sock")
	defer func() {
		if err != nil {
			_ = d.Close()
			d = nil
		}
	}()
	if err := d.WriteConfig(opts.Runtimes); err != nil {
		return d, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o711); err != nil {
		return d, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "var"), 0o755); err != nil {
		return d, err
	}
	if err := os.Symlink("../run", filepath.Join(dir, "var", "run")); err != nil {
		return d, err
	}
	d.Storage = opts.StorageDriver
	if s := os.Getenv("BULKHEAD_TEST_STORAGE_DRIVER"); s != "" {
		d.Storage = s
	}
	if d.Storage == "" {
		d.Storage = "overlay2"
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.OVERLAYFS_SUPER_MAGIC {
			d.Storage = "vfs"
		}
	}
	bridge := "none"
	if !opts.NoBridge {
		if bridge, err = makeBridge(); err != nil {
			return d, err
		}
		d.Bridge = bridge
	}
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		return d, err
	}
	argv := []string{bin,
		"--config-file", d.ConfigFile,
		"--data-root", d.DataRoot,
		"--exec-root", d.ExecRoot,
		"--pidfile", d.PidFile,
		"--host", d.Host,
		"--storage-driver", d.Storage,
		"--bridge", bridge,
		// The host's firewall is not the harness's to change.
		"--iptables=false", "--ip6tables=false", "--ip-forward=false", "--ip-masq=false",
		"--userland-proxy=false",
		"--shutdown-timeout", "2",
	}
	d.argv = argv
	return d, d.start()
}

// start runs dockerd with d.argv and waits until its API answers.
func (d *Docker) start() error {
	var err error
	if d.proc, err = startProcess("dockerd", d.Log, d.argv); err != nil {
		return err
	}
	client := d.HTTPClient()
	return waitFor(d.proc, 60*time.Second, func() error {
		resp, err := client.Get("http://docker/_ping")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("_ping: %s", resp.Status)
		}
		return nil
	})
}

// Restart stops dockerd and starts it again on the same directories (its
// images stay; running containers are stopped): what a change SIGHUP does
// not apply needs.
func (d *Docker) Restart() error {
	if err := d.proc.stop(30 * time.Second); err != nil {
		return err
	}
	return d.start()
}

// NewDocker starts a private dockerd for one test and stops it when the
// test ends.
func NewDocker(t testing.TB, opts DockerOptions) *Docker {
	t.Helper()
	d, err := StartDocker(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

// WriteConfig writes the daemon.json with these runtimes; Reload applies
// it to a running dockerd.
func (d *Docker) WriteConfig(runtimes map[string]Runtime) error {
	cfg := map[string]any{}
	if len(runtimes) > 0 {
		cfg["runtimes"] = runtimes
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(d.ConfigFile, append(data, '\n'), 0o644)
}

// Reload sends dockerd SIGHUP, which rereads daemon.json (runtimes,
// default-runtime), and waits until the log says it did.
func (d *Docker) Reload() error {
	before := countIn(d.Log, "Reloaded configuration")
	if err := d.proc.cmd.Process.Signal(unix.SIGHUP); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for countIn(d.Log, "Reloaded configuration") == before {
		if time.Now().After(deadline) {
			return fmt.Errorf("dockerd did not reload daemon.json:\n%s", d.proc.tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func countIn(path, s string) int {
	data, _ := os.ReadFile(path)
	return bytes.Count(data, []byte(s))
}

// HTTPClient talks to dockerd's API socket directly.
func (d *Docker) HTTPClient() *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "unix", d.Socket)
		}},
	}
}

// Cmd is the docker CLI pointed at this daemon, with a config directory of
// its own (no credentials or contexts of the host user).
func (d *Docker) Cmd(args ...string) *exec.Cmd {
	cmd := exec.Command("docker", args...)
	cmd.Env = d.Env()
	return cmd
}

// Env is the environment the docker CLI needs for this daemon (for tools
// that run docker themselves, such as script -c).
func (d *Docker) Env() []string {
	return append(os.Environ(), "DOCKER_HOST="+d.Host, "DOCKER_CONFIG="+filepath.Join(d.Dir, "client"), "DOCKER_CLI_HINTS=false")
}

// Result is what one docker command printed and returned.
type Result struct {
	Args           []string
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return fmt.Sprintf("docker %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.Code, r.Stdout, r.Stderr)
}

// Run runs the docker CLI with a deadline and returns its output and exit
// status; it fails the test only when docker cannot run at all.
func (d *Docker) Run(t testing.TB, args ...string) Result {
	t.Helper()
	return d.RunInput(t, nil, args...)
}

// RunInput is Run with stdin.
func (d *Docker) RunInput(t testing.TB, stdin []byte, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv, cidfile := d.withCidfile(args)
	cmd := exec.CommandContext(ctx, "docker", argv...)
	cmd.Env = d.Env()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Args: args, Stdout: out.String(), Stderr: errb.String()}
	if cidfile != "" {
		d.checkWhenDone(t, cidfile)
	}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
		}
		r.Code = ee.ExitCode()
	}
	return r
}

// withCidfile makes `docker run` and `docker create` write the id of the
// container they make to a file (the caller's --cidfile, or one of the
// harness's), so that the harness knows every container a test made.
func (d *Docker) withCidfile(args []string) ([]string, string) {
	if len(args) == 0 || (args[0] != "run" && args[0] != "create") {
		return args, ""
	}
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--cidfile="); ok {
			return args, v
		}
		if a == "--cidfile" && i+1 < len(args) {
			return args, args[i+1]
		}
	}
	path := filepath.Join(d.Dir, fmt.Sprintf("cid-%d", d.cids.Add(1)))
	return append([]string{args[0], "--cidfile", path}, args[1:]...), path
}

// checkWhenDone records the container whose id docker wrote to cidfile.
// At the end of the test every container it made is removed (if the test
// left it) and nothing of any may remain (AssertNoneLeft).
func (d *Docker) checkWhenDone(t testing.TB, cidfile string) {
	data, err := os.ReadFile(cidfile)
	id := strings.TrimSpace(string(data))
	if err != nil || id == "" {
		return // docker made no container
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.made == nil {
		d.made = map[testing.TB][]string{}
	}
	if _, ok := d.made[t]; !ok {
		t.Cleanup(func() { d.removeAndCheck(t) })
	}
	d.made[t] = append(d.made[t], id)
}

func (d *Docker) removeAndCheck(t testing.TB) {
	d.mu.Lock()
	ids := d.made[t]
	delete(d.made, t)
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rm := exec.CommandContext(ctx, "docker", append([]string{"rm", "-f"}, ids...)...)
	rm.Env = d.Env()
	if out, err := rm.CombinedOutput(); err != nil {
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if !strings.Contains(l, "No such container") {
				t.Errorf("docker rm -f: %v: %s", err, l)
			}
		}
	}
	AssertNoneLeft(t, ids, d.RuntimeRoot())
}

// Must runs docker and fails the test unless it exits 0; it returns stdout
// without the trailing newline.
func (d *Docker) Must(t testing.TB, args ...string) string {
	t.Helper()
	r := d.Run(t, args...)
	if r.Code != 0 {
		t.Fatalf("%s\ndockerd log:\n%s", r, d.proc.tail(60))
	}
	return strings.TrimRight(r.Stdout, "\n")
}

// Import makes image name from a root filesystem directory, the way `tar
// -C ROOTFS -c . | docker import - NAME` does: no registry is needed.
func (d *Docker) Import(rootfs, name string) error {
	tar := exec.Command("tar", "-C", rootfs, "-c", ".")
	imp := d.Cmd("import", "-", name)
	pipe, err := tar.StdoutPipe()
	if err != nil {
		return err
	}
	imp.Stdin = pipe
	var errb bytes.Buffer
	tar.Stderr, imp.Stderr = &errb, &errb
	if err := tar.Start(); err != nil {
		return err
	}
	if err := imp.Run(); err != nil {
		_ = tar.Wait()
		return fmt.Errorf("docker import %s: %v: %s", name, err, errb.String())
	}
	if err := tar.Wait(); err != nil {
		return fmt.Errorf("tar -C %s: %v: %s", rootfs, err, errb.String())
	}
	return nil
}

// RuntimeRoot is the --root dockerd (through the runc shim) hands every
// runc-compatible runtime: <exec-root>/runtime-runc/moby.
func (d *Docker) RuntimeRoot() string {
	return filepath.Join(d.ExecRoot, "runtime-runc", "moby")
}

// BundleDir is the bundle containerd makes for a container id.
func (d *Docker) BundleDir(id string) string {
	return filepath.Join(d.ExecRoot, "containerd", "daemon", "io.containerd.runtime.v2.task", "moby", id)
}

// Ctr runs ctr against the containerd dockerd started, in dockerd's
// namespace moby.
func (d *Docker) Ctr(args ...string) *exec.Cmd {
	return exec.Command("ctr", append([]string{"--address", d.ContainerdAddress, "--namespace", "moby"}, args...)...)
}

// LogTail is the end of dockerd's log, for failure messages.
func (d *Docker) LogTail(n int) string { return tailFile(d.Log, n) }

// Close removes every container, stops dockerd and containerd, kills what
// they left, unmounts and removes the directory and the bridge.
func (d *Docker) Close() error {
	var errs []string
	if d.proc != nil && !d.proc.exited() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ids, _ := exec.CommandContext(ctx, "docker", "-H", d.Host, "ps", "-aq").Output()
		if f := strings.Fields(string(ids)); len(f) > 0 {
			_ = exec.CommandContext(ctx, "docker", append([]string{"-H", d.Host, "rm", "-f"}, f...)...).Run()
		}
		cancel()
	}
	// dockerd stops the containerd it started; shims it left are found by
	// the address on their command lines.
	if err := d.proc.stop(30 * time.Second); err != nil {
		errs = append(errs, err.Error())
	}
	if pids := killUnder(d.Dir); len(pids) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
	if err := unmountUnder(d.Dir); err != nil {
		errs = append(errs, err.Error())
	}
	if d.Bridge != "" {
		if out, err := exec.Command("ip", "link", "delete", d.Bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Sprintf("ip link delete %s: %v: %s", d.Bridge, err, out))
		}
	}
	if err := os.RemoveAll(d.Dir); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("docker harness %s: %s", d.Dir, strings.Join(errs, "; "))
	}
	return nil
}

// makeBridge creates a bridge of the harness's own, with a random private
// /24, for dockerd's default network: docker0 may belong to a host dockerd.
func makeBridge() (string, error) {
	name := fmt.Sprintf("bhd%06x", rand.IntN(1<<24))
	subnet := fmt.Sprintf("10.%d.%d.1/24", 200+rand.IntN(50), rand.IntN(256))
	for _, args := range [][]string{
		{"link", "add", name, "type", "bridge"},
		{"addr", "add", subnet, "dev", name},
		{"link", "set", name, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			_ = exec.Command("ip", "link", "delete", name).Run()
			return "", fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return name, nil
}
