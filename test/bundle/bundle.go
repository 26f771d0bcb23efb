// Package bundle builds OCI bundles for tests: a busybox rootfs made from
// the host's busybox-static and the config.json `runc spec` writes.
package bundle

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer/specconv"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Busybox is where Debian's busybox-static installs the static binary.
const Busybox = "/bin/busybox"

// New makes a bundle in a temporary directory whose process runs args, and
// returns its path. mutate, if given, edits the spec before it is written.
func New(t testing.TB, args []string, mutate ...func(*rspec.Spec)) string {
	t.Helper()
	dir := t.TempDir()
	if err := Make(dir, args, mutate...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// NewCRI makes the bundle of container id of a pod as containerd's CRI
// plugin lays it out, kind "sandbox" or "container", and returns its path:
// the task's bundle in the k8s.io namespace beside the plugin's own
// directory for id, in a state directory of root's. bulkhead takes a
// spec's pod annotations only from such a bundle.
func NewCRI(t testing.TB, kind, id string, args []string, mutate ...func(*rspec.Spec)) string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	dir := filepath.Join(state, "io.containerd.runtime.v2.task", "k8s.io", id)
	plugin := map[string]string{"sandbox": "sandboxes", "container": "containers"}[kind]
	if plugin == "" {
		t.Fatalf("kind %q: a CRI task is a sandbox or a container", kind)
	}
	if err := os.MkdirAll(filepath.Join(state, "io.containerd.grpc.v1.cri", plugin, id), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Make(dir, args, mutate...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Make writes a bundle into dir (rootfs/ and config.json).
func Make(dir string, args []string, mutate ...func(*rspec.Spec)) error {
	if err := Rootfs(filepath.Join(dir, "rootfs")); err != nil {
		return err
	}
	s := specconv.Example()
	s.Process.Terminal = false
	s.Process.Args = args
	for _, m := range mutate {
		m(s)
	}
	return Write(dir, s)
}

// Write stores s as dir/config.json.
func Write(dir string, s *rspec.Spec) error {
	data, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
}

// Read loads dir/config.json.
func Read(dir string) (*rspec.Spec, error) {
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	var s rspec.Spec
	return &s, json.Unmarshal(data, &s)
}

// Rootfs makes a minimal root filesystem at dir: busybox with a link per
// applet, the directories a container expects, and passwd/group entries for
// root and nobody.
func Rootfs(dir string) error {
	for _, d := range []string{"bin", "sbin", "etc", "tmp", "proc", "sys", "dev", "root", "usr/bin", "var"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := copyFile(Busybox, filepath.Join(dir, "bin/busybox"), 0o755); err != nil {
		return fmt.Errorf("busybox-static is needed for test bundles (hack/install-deps.sh): %w", err)
	}
	out, err := exec.Command(Busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox --list: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "busybox" {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", applet)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// AddFile copies a host file into the rootfs at the same path.
func AddFile(rootfs, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	dst := filepath.Join(rootfs, path)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return copyFile(path, dst, st.Mode().Perm())
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// AddProgram copies a dynamically linked host program into the rootfs at
// its own path, with every library ldd lists (the loader included).
func AddProgram(rootfs, path string) error {
	if err := AddFile(rootfs, path); err != nil {
		return err
	}
	out, err := exec.Command("ldd", path).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", path, err)
	}
	// "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" and
	// "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "/") {
				if err := AddFile(rootfs, f); err != nil {
					return fmt.Errorf("%s needs %s: %w", path, f, err)
				}
			}
		}
	}
	return nil
}
