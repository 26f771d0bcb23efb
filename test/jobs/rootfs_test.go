package jobs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// hostRootfs builds the image the jobs run in from this machine's
// packages: /usr (Debian's toolchains and the Go toolchain in
// /usr/local/go) hard-linked, not copied, so building it takes seconds and
// no disk; the container's root is read-only, so the links cannot be
// written through. /etc gets only what the toolchains read: the
// alternatives (cc for cargo's linker), the dynamic linker's cache,
// Python's site configuration, and passwd/group with the sandbox user.
func hostRootfs(dir string) error {
	for _, d := range []string{"proc", "sys", "dev", "tmp", "etc", "home", "workspace", "run", "var/tmp", "home/sandbox", "scratch"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-al", "/usr", filepath.Join(dir, "usr")).CombinedOutput(); err != nil {
		return fmt.Errorf("hard-link /usr: %v: %s", err, out)
	}
	for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(dir, l)); err != nil {
			return err
		}
	}
	etc := []string{"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"}
	py, _ := filepath.Glob("/etc/python3*")
	for _, src := range append(etc, py...) {
		if _, err := os.Lstat(src); err != nil {
			continue
		}
		if out, err := exec.Command("cp", "-a", src, filepath.Join(dir, "etc")).CombinedOutput(); err != nil {
			return fmt.Errorf("copy %s: %v: %s", src, err, out)
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nuser:x:1000:1000:user:/home/user:/bin/sh\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\nuser:x:1000:\n",
		"etc/hosts":  "127.0.0.1 localhost\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
