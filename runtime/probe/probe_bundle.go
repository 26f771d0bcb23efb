package probe

import (
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/opencontainers/runc/libcontainer/specconv"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

// BinaryName is the static boundary probe (cmd/bulkhead-probe).
const BinaryName = "bulkhead-probe"

// probeCanaryEnv is a credential-looking variable the probe bundle asks
// for: the environment control shows whether the policy dropped it. Its
// value is no secret.
const probeCanaryEnv = "BULKHEAD_PROBE_API_TOKEN=canary-not-a-secret"

// FindBinary returns the probe next to the bulkhead executable self,
// else the one on PATH, and refuses one that is not static: the rootfs the
// probe runs in has no libc.
func FindBinary(self string) (string, error) {
	var candidates []string
	if self != "" {
		candidates = append(candidates, filepath.Join(filepath.Dir(self), BinaryName))
	}
	if p, err := exec.LookPath(BinaryName); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := checkOwnedBySelf(p, st); err != nil {
			return "", err
		}
		if err := CheckStatic(p); err != nil {
			return "", err
		}
		return p, nil
	}
	return "", fmt.Errorf("probe: no %s next to %s or on PATH (make build puts it in bin/)", BinaryName, self)
}

// checkOwnedBySelf refuses a probe binary that a user other than the one
// running bulkhead (or root) could have written: the probe's report is
// the evidence each control is judged by, so a probe rewritten by someone
// else could report a boundary that is not there.
func checkOwnedBySelf(path string, st os.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("probe binary %s: no owner to check", path)
	}
	if euid := uint32(os.Geteuid()); sys.Uid != 0 && sys.Uid != euid {
		return fmt.Errorf("probe binary %s is owned by uid %d; it must be root's (or yours): chown root %s", path, sys.Uid, path)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("probe binary %s: mode %04o lets others write it; run chmod go-w %s", path, st.Mode().Perm(), path)
	}
	return nil
}

// CheckStatic refuses an ELF file that asks for a dynamic loader.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("probe binary %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("probe binary %s is dynamically linked; build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// Bundle is the throwaway bundle `bulkhead probe` runs: a rootfs made
// of the probe alone, and a host folder to bind-mount at /workspace.
type Bundle struct {
	Dir       string // bundle directory: config.json and rootfs/
	workspace string // host folder bind-mounted at /workspace
}

// MakeBundle writes, below work, a bundle whose config is what a
// careless caller would send (root user, writable root, the host's network,
// a writable bind of a host folder, a credential in the environment), so
// that every control the probe sees is the policy's doing, not the
// bundle's. args follow the probe's path in process.args. The host folder
// belongs to owner (the profile's uid and gid), as a checkout given to
// the sandbox user would: one of another owner is a workspace only where
// workspace_owners names it.
func MakeBundle(work, probe string, args []string, owner [2]int) (*Bundle, error) {
	b := &Bundle{Dir: filepath.Join(work, "bundle"), workspace: filepath.Join(work, "workspace")}
	rootfs := filepath.Join(b.Dir, "rootfs")
	for _, d := range []string{"bin", "etc", "proc", "sys", "dev", "workspace"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			return nil, err
		}
	}
	// An empty /tmp anyone may use, as an image would have it; the policy
	// mounts its own tmpfs over it.
	if err := mkdirMode(filepath.Join(rootfs, "tmp"), 0o1777); err != nil {
		return nil, err
	}
	// The workspace is writable by anyone on the host, so only the
	// read-only mount can refuse the probe's write (EROFS, not EACCES).
	if err := mkdirMode(b.workspace, 0o777); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(b.workspace, "README"), []byte(workspaceReadme), 0o644); err != nil {
		return nil, err
	}
	for _, f := range []string{b.workspace, filepath.Join(b.workspace, "README")} {
		if err := os.Lchown(f, owner[0], owner[1]); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		mode os.FileMode
	}{
		{"bin/" + BinaryName, 0o755},
		// A setuid-root copy: under no_new_privs exec must gain nothing.
		{"bin/" + BinaryName + "-suid", 0o755 | os.ModeSetuid},
	}
	for _, f := range files {
		if err := copyMode(probe, filepath.Join(rootfs, f.name), f.mode); err != nil {
			return nil, err
		}
	}
	text := map[string]struct {
		content string
		mode    os.FileMode
	}{
		"etc/passwd": {"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n", 0o644},
		"etc/group":  {"root:x:0:\nnogroup:x:65534:\n", 0o644},
		// The root-owned 0600 file the identity control must not read.
		"etc/shadow": {"root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n", 0o600},
	}
	for name, f := range text {
		if err := writeMode(filepath.Join(rootfs, name), []byte(f.content), f.mode); err != nil {
			return nil, err
		}
	}

	s := specconv.Example()
	s.Hostname = "bulkhead-probe"
	s.Process.Terminal = false
	s.Process.Args = append([]string{"/bin/" + BinaryName}, args...)
	s.Process.Env = append(s.Process.Env, probeCanaryEnv)
	s.Root = &rspec.Root{Path: "rootfs", Readonly: false}
	var ns []rspec.LinuxNamespace
	for _, n := range s.Linux.Namespaces {
		if n.Type != rspec.NetworkNamespace {
			ns = append(ns, n)
		}
	}
	s.Linux.Namespaces = ns
	// No cgroupsPath: bulkhead chooses its own (DefaultCgroupsPath), where
	// the probe's host evidence is read; a caller may not name one there.
	s.Linux.CgroupsPath = ""
	s.Mounts = append(s.Mounts, rspec.Mount{
		Destination: "/workspace", Type: "bind", Source: b.workspace, Options: []string{"rbind", "rw"},
	})
	data, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(b.Dir, "config.json"), data, 0o644); err != nil {
		return nil, err
	}
	return b, nil
}

// mkdirMode creates dir with exactly mode (MkdirAll passes the umask and
// drops the sticky bit).
func mkdirMode(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.Chmod(dir, mode.Perm()|mode&os.ModeSticky)
}

func writeMode(path string, data []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, data, mode.Perm()); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// copyMode copies src to dst and sets mode afterwards, since the umask
// and WriteFile drop the setuid bit.
func copyMode(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o700)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("copy %s: %w", src, err), os.Remove(dst))
	}
	return os.Chmod(dst, mode)
}

const workspaceReadme = "a host folder: the sandbox must not write here\n"

// HostFolderUnchanged tells whether the host folder bound at /workspace
// still holds exactly what the bundle put there.
func (b *Bundle) HostFolderUnchanged() bool {
	entries, err := os.ReadDir(b.workspace)
	if err != nil || len(entries) != 1 || entries[0].Name() != "README" {
		return false
	}
	data, err := specs.ReadRegular(filepath.Join(b.workspace, "README"), false)
	return err == nil && string(data) == workspaceReadme
}
