// Package jobimage gives the job tests and benchmarks their image, made
// of this machine's packages, and the real projects they run.
package jobimage

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
)

// Rootfs builds the image the jobs run in from this machine's
// packages: /usr (Debian's toolchains and the Go toolchain in
// /usr/local/go) hard-linked, not copied, so building it takes seconds and
// no disk; the container's root is read-only, so the links cannot be
// written through. /etc gets only what the toolchains read: the
// alternatives (cc for cargo's linker), the dynamic linker's cache,
// Python's site configuration, and passwd/group with the sandbox user.
func Rootfs(dir string) error {
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

// Path is the PATH a job gets, inside and on the host: the host's Go
// toolchain, then Debian's.
const Path = "PATH=/usr/local/go/bin:/usr/bin:/bin"

// Job is one real workload, unmodified, as an agent or a CI runner starts
// it in a checkout.
type Job struct {
	Name  string
	Tools []string // host files the toolchain needs
	Src   string   // the project under testdata/
	Cwd   string   // where the command runs, relative to the checkout
	Args  []string
	// BreakTest turns one passing test into a failing one: file, old, new.
	BreakTest  [3]string
	Pass, Fail string // what the tool prints for a passing and a failing run
}

// Jobs are the test suites of the tests profile.
var Jobs = []Job{
	{Name: "go", Tools: []string{"/usr/local/go/bin/go"}, Src: "go", Cwd: ".",
		Args:      []string{"go", "test", "./..."},
		BreakTest: [3]string{"calc/calc_test.go", "Add(2, 3), 5", "Add(2, 3), 6"},
		Pass:      "ok  \texample.com/calc/calc", Fail: "--- FAIL: TestAdd"},
	{Name: "pytest", Tools: []string{"/usr/bin/pytest"}, Src: "python", Cwd: ".",
		Args:      []string{"pytest", "-q"},
		BreakTest: [3]string{"tests/test_add.py", "== 5", "== 6"},
		Pass:      "1 passed", Fail: "1 failed"},
	{Name: "npm", Tools: []string{"/usr/bin/node", "/usr/bin/npm"}, Src: "npm", Cwd: "app",
		// The local dependency (file:../lib) is installed without a registry.
		Args:      []string{"sh", "-c", "npm install --offline --no-audit --no-fund && npm test"},
		BreakTest: [3]string{"app/add.test.js", "add(2, 3), 5", "add(2, 3), 6"},
		Pass:      "# pass 1", Fail: "# fail 1"},
	{Name: "cargo", Tools: []string{"/usr/bin/cargo", "/usr/bin/rustc"}, Src: "cargo", Cwd: ".",
		Args:      []string{"cargo", "test", "--offline"},
		BreakTest: [3]string{"src/lib.rs", "add(2, 3), 5", "add(2, 3), 6"},
		Pass:      "test result: ok. 1 passed", Fail: "test result: FAILED"},
}

// Formatters rewrite a checkout in place: gofmt, then black (Debian's
// packaged Python formatter), on the project "fmt".
var Formatters = []string{"sh", "-c", "gofmt -l -w . && black -q ."}

// Missing returns the first of the job's tools that is not installed.
func (j Job) Missing() string {
	for _, p := range j.Tools {
		if _, err := os.Stat(p); err != nil {
			return p
		}
	}
	return ""
}

// Checkout copies the project src to dst, optionally breaks one of its
// tests (edit: file, old, new), and gives it to uid:gid uid.
func Checkout(src, dst string, uid int, edit *[3]string) error {
	_, file, _, _ := goruntime.Caller(0)
	from := filepath.Join(filepath.Dir(file), "testdata", src)
	if out, err := exec.Command("cp", "-a", from, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %v: %s", src, err, out)
	}
	// Unformatted Go sources are stored under another name, or the
	// project's own gofmt check would refuse them.
	unformatted, _ := filepath.Glob(filepath.Join(dst, "*", "*.go.unformatted"))
	for _, p := range unformatted {
		if err := os.Rename(p, strings.TrimSuffix(p, ".unformatted")); err != nil {
			return err
		}
	}
	if edit != nil {
		p := filepath.Join(dst, edit[0])
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), edit[1]) {
			return fmt.Errorf("%s does not contain %q", edit[0], edit[1])
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), edit[1], edit[2], 1)), 0o644); err != nil {
			return err
		}
	}
	if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", uid, uid), dst).CombinedOutput(); err != nil {
		return fmt.Errorf("chown: %v: %s", err, out)
	}
	return nil
}

// HostArgv resolves args[0] in Path, not in the caller's PATH, so a job
// run on the host uses the same toolchain as inside (not, say, a rustup
// shim earlier in root's PATH).
func HostArgv(args []string) []string {
	if strings.Contains(args[0], "/") {
		return args
	}
	for _, dir := range strings.Split(strings.TrimPrefix(Path, "PATH="), ":") {
		if p := filepath.Join(dir, args[0]); isExecutable(p) {
			return append([]string{p}, args[1:]...)
		}
	}
	return args
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
