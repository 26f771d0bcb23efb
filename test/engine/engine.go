// Package engine starts private container engines for integration tests:
// a containerd and a dockerd that use only a temporary directory of their
// own (state, data, sockets, pid files), never the host's /var/lib/docker,
// /run/docker or /run/containerd/containerd.sock, and that are stopped and
// cleaned up however the test ends.
//
// A test package starts one engine in a helper guarded by sync.Once and
// closes it in TestMain, or per test with NewDocker/NewContainerd, which
// register Close with t.Cleanup.
package engine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Ensure installs the Debian packages that provide the named commands when
// any is missing, through the project's hack/install-deps.sh, so a fresh
// machine needs no manual step.
func Ensure(pkgs map[string]string) error {
	var missing []string
	for cmd, pkg := range pkgs {
		if _, err := exec.LookPath(cmd); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("need %s installed (run hack/install-deps.sh as root)", strings.Join(missing, " "))
	}
	sort.Strings(missing)
	script := filepath.Join(repoRoot(), "hack", "install-deps.sh")
	cmd := exec.Command("bash", append([]string{script}, missing...)...)
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", script, strings.Join(missing, " "), err, out)
	}
	return nil
}

func repoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// process is one daemon the harness started, with its log.
type process struct {
	name string
	env  []string // added to the test's environment
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startProcess runs argv with the test's environment and env added.
func startProcess(name, logPath string, argv []string, env ...string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	// Its own process group, and SIGTERM if the test binary dies without
	// running its cleanup (a panic, a timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// Pdeathsig fires when the thread that forked exits; keep it alive.
	goruntime.LockOSThread()
	err = cmd.Start()
	goruntime.UnlockOSThread()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, env: env, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs.
func (p *process) stop(grace time.Duration) error {
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("%s did not stop within %s after SIGTERM; killed", p.name, grace)
}

// tail returns the last lines of the daemon's log, for failure messages.
func (p *process) tail(n int) string {
	return tailFile(p.log, n)
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls ready until it succeeds, the process exits, or timeout.
func waitFor(p *process, timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited (%v) before it was ready:\n%s", p.name, p.err, p.tail(30))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %v\n%s", p.name, timeout, err, p.tail(30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killUnder SIGKILLs every process whose command line mentions dir, apart
// from the caller: what a crashed engine leaves behind (shims, their
// children) is found by the private paths on their command lines, and only
// processes this harness's engines started have those.
func killUnder(dir string) []int {
	self := os.Getpid()
	var killed []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue
		}
		if unix.Kill(pid, unix.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return killed
}

// unmountUnder detaches every mount below dir, deepest first, so the
// directory can be removed (overlay layers, shm, netns bind mounts).
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, mp := range points {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// tempDir makes a short directory: unix socket paths must stay under 108
// bytes, and t.TempDir() names can be long.
func tempDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dir)
}

// Eventually polls cond every 100 ms for up to timeout.
func Eventually(timeout time.Duration, cond func() bool) bool {
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

// ProcessesMentioning lists the processes, other than this one, whose
// command line contains s (a container id: its shim runs with -id <id>).
func ProcessesMentioning(s string) []string {
	var found []string
	self := fmt.Sprint(os.Getpid())
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' || e.Name() == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), s) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}
