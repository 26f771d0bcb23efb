// Package cgroupv2 runs bulkhead's cgroup v2 tests on a kernel that has
// cgroup v2 alone: it boots Debian's cloud kernel under QEMU (software
// emulation is enough) with cgroup_no_v1=all, from an initramfs holding
// busybox, runc, the freshly built bulkhead and the test binaries of
// test/cgroupv2/inguest and test/failclosed, and reports each test the
// guest ran as a subtest here, read from the serial console.
package cgroupv2

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
)

// guestDeadline bounds one boot: a hang (a guest that never powers off)
// fails the test instead of stalling the suite. Emulation on a loaded
// 2-core host is slow, so it is about five times the 3.5 minutes measured
// for TestGuest; no assertion is timed. Two boots stay within make
// test's 40-minute go test timeout, so a hang is reported here, not as
// go test's panic.
const guestDeadline = 18 * time.Minute

// repoRoot is the checkout this file is in.
func repoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// needGuest skips unless root (the hack/ script installs QEMU with apt
// and the guest's runc comes from the host).
func needGuest(t *testing.T) {
	t.Helper()
	binaries.NeedRoot(t, "runc", "apt-get")
}

// kernelDir installs QEMU and the cloud kernel, or finds them cached.
func kernelDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join(repoRoot(), "hack", "install-v2guest.sh")).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("hack/install-v2guest.sh: %v\n%s", err, msg)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// goBuild runs go with args in the repository root.
func goBuild(t *testing.T, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// testBinary builds the test binary of pkg (./test/...) into dir; the
// guest runs the binaries in the order of their numbers.
func testBinary(t *testing.T, dir string, n int, pkg string, tags ...string) string {
	t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("%02d-%s.test", n, filepath.Base(pkg)))
	args := []string{"test", "-c", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	goBuild(t, nil, append(args, pkg)...)
	return out
}

// guest is one boot's console, split up.
type guest struct {
	console  string
	kernel   string
	mounts   []string // "TYPE DIR" of every cgroup-type mount
	done     bool
	binaries []*binaryRun
	boot     time.Duration // until the guest's first line
	total    time.Duration
}

type binaryRun struct {
	name    string
	status  string // the exit status the init printed, "" when it never ended
	seconds string
	tests   map[string]*testRun
	order   []string
	output  []string // lines outside any test (a panic, a build failure)
}

type testRun struct {
	result string // PASS, FAIL, SKIP, or "" when it never ended
	lines  []string
}

// boot builds the initramfs from bin (bulkhead, bulkhead-probe) and the
// test binaries, boots it with the run filter, and parses the console.
func boot(t *testing.T, bin, run string, tests ...string) *guest {
	t.Helper()
	kdir := kernelDir(t)
	kernels, _ := filepath.Glob(filepath.Join(kdir, "boot", "vmlinuz-*"))
	if len(kernels) != 1 {
		t.Fatalf("want one kernel under %s/boot, found %v", kdir, kernels)
	}
	initrd := filepath.Join(t.TempDir(), "initrd.gz")
	args := append([]string{filepath.Join(repoRoot(), "hack", "v2guest-initramfs.sh"), kdir, initrd, bin}, tests...)
	if out, err := exec.Command("bash", args...).CombinedOutput(); err != nil {
		t.Fatalf("hack/v2guest-initramfs.sh: %v\n%s", err, out)
	}
	cmdline := "console=ttyS0 panic=-1 quiet loglevel=1 cgroup_no_v1=all"
	if run != "" {
		cmdline += " bulkhead.run=" + run
	}
	ctx, cancel := context.WithTimeout(context.Background(), guestDeadline)
	defer cancel()
	// The guest's clock counts the instructions it ran (-icount), not the
	// host's time: a host too busy to run the emulator makes the guest
	// slower, never late. With two emulated CPUs on host threads, a
	// loaded host left one spinning on a lock the other held until the
	// guest kernel reported soft lockups, and the guest's own deadlines
	// (exec verification, the probe's attempts) ran out in real time.
	// icount needs a single emulated CPU; sleep=off jumps an idle guest
	// to its next timer. shift=0 is one instruction per nanosecond.
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", "-m", "2048", "-smp", "1", "-icount", "shift=0,sleep=off", "-cpu", "max",
		"-nographic", "-no-reboot", "-kernel", kernels[0], "-initrd", initrd, "-append", cmdline)
	var console bytes.Buffer
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("qemu-system-x86_64: %v", err)
	}
	pw.Close()
	g := &guest{}
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		console.WriteString(line + "\n")
		if g.boot == 0 && strings.Contains(line, "BULKHEAD-GUEST ") {
			g.boot = time.Since(start)
		}
	}
	werr := cmd.Wait()
	g.total = time.Since(start)
	g.console = console.String()
	parse(g)
	t.Logf("qemu: %v; guest's first line after %s, %s in all", werr, g.boot.Round(time.Second), g.total.Round(time.Second))
	if ctx.Err() != nil {
		t.Errorf("the guest did not power off within %s: killed", guestDeadline)
	}
	if err := g.ended(); err != nil {
		t.Errorf("%v; console tail:\n%s", err, tail(g.console, 60))
		if g.silent() {
			t.FailNow()
		}
	}
	return g
}

// silent: not one line of bulkhead's init reached the console.
func (g *guest) silent() bool {
	return g.kernel == "" && len(g.binaries) == 0 && !g.done
}

// ended says what is wrong with a guest that printed nothing of
// bulkhead's or did not get to its end; what it did print is still
// reported test by test.
func (g *guest) ended() error {
	if g.silent() {
		return fmt.Errorf("the guest printed nothing of bulkhead's (no BULKHEAD-GUEST line)")
	}
	if !g.done {
		return fmt.Errorf("the guest did not get to its end")
	}
	return nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var (
	runLine    = regexp.MustCompile(`^=== (?:RUN|CONT|PAUSE|NAME)\s+(\S+)`)
	resultLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(`)
	endLine    = regexp.MustCompile(`^end (\S+) status (\d+) seconds (\d+)`)
)

// parse reads the init's BULKHEAD-GUEST lines and, between a binary's
// begin and end, go test -v's lines.
func parse(g *guest) {
	var cur *binaryRun
	var test string
	for _, line := range strings.Split(g.console, "\n") {
		if i := strings.Index(line, "BULKHEAD-GUEST "); i >= 0 {
			msg := line[i+len("BULKHEAD-GUEST "):]
			switch {
			case strings.HasPrefix(msg, "kernel "):
				g.kernel = strings.TrimPrefix(msg, "kernel ")
			case strings.HasPrefix(msg, "mount "):
				g.mounts = append(g.mounts, strings.TrimPrefix(msg, "mount "))
			case strings.HasPrefix(msg, "begin "):
				cur = &binaryRun{name: strings.TrimPrefix(msg, "begin "), tests: map[string]*testRun{}}
				g.binaries = append(g.binaries, cur)
				test = ""
			case endLine.MatchString(msg):
				m := endLine.FindStringSubmatch(msg)
				if cur != nil && cur.name == m[1] {
					cur.status, cur.seconds = m[2], m[3]
				}
				cur = nil
			case msg == "done":
				g.done = true
			}
			continue
		}
		if cur == nil {
			continue
		}
		if m := runLine.FindStringSubmatch(line); m != nil {
			test = m[1]
			if cur.tests[test] == nil {
				cur.tests[test] = &testRun{}
				cur.order = append(cur.order, test)
			}
			continue
		}
		if m := resultLine.FindStringSubmatch(line); m != nil {
			if tr := cur.tests[m[2]]; tr != nil {
				tr.result = m[1]
			}
			continue
		}
		if tr := cur.tests[test]; tr != nil {
			tr.lines = append(tr.lines, line)
		} else {
			cur.output = append(cur.output, line)
		}
	}
}

// report turns one binary's tests into subtests of t, nested as they ran.
func (b *binaryRun) report(t *testing.T) {
	t.Helper()
	if b.status == "" {
		t.Errorf("%s never ended in the guest (a hang or a crash); its output:\n%s", b.name, strings.Join(b.output, "\n"))
	}
	var failed bool
	for _, name := range b.order {
		if !strings.Contains(name, "/") {
			failed = b.reportTest(t, name) || failed
		}
	}
	if b.status != "" && b.status != "0" && !failed {
		t.Errorf("%s exited %s in the guest with no failed test: %s", b.name, b.status, strings.Join(b.output, "\n"))
	}
	if len(b.order) == 0 {
		t.Errorf("%s ran no test in the guest", b.name)
	}
}

// reportTest reports name and its children; it tells whether any failed.
func (b *binaryRun) reportTest(t *testing.T, name string) bool {
	tr := b.tests[name]
	failed := tr.result == "FAIL" || tr.result == ""
	short := name[strings.LastIndex(name, "/")+1:]
	t.Run(short, func(t *testing.T) {
		for _, child := range b.order {
			if strings.HasPrefix(child, name+"/") && !strings.Contains(child[len(name)+1:], "/") {
				b.reportTest(t, child)
			}
		}
		out := strings.Join(tr.lines, "\n")
		switch tr.result {
		case "PASS":
			t.Log(out)
		case "SKIP":
			// The guest is the real thing (cgroup v2 alone, root, its
			// tools): a test that skips there hides what it was to show.
			t.Errorf("skipped in the guest, where everything it needs is there:\n%s", out)
		case "FAIL":
			t.Error(out)
		default:
			t.Errorf("no result from the guest (it hung or ended first):\n%s", out)
		}
	})
	return failed
}

func (g *guest) binary(name string) *binaryRun {
	for _, b := range g.binaries {
		if b.name == name {
			return b
		}
	}
	return nil
}

// TestGuest boots the v2-only guest with the built bulkhead and runs
// test/cgroupv2/inguest and test/failclosed there.
func TestGuest(t *testing.T) {
	needGuest(t)
	dir := t.TempDir()
	// inguest first: its doctor test must see a root with no child group
	// yet, as on a freshly booted host.
	tests := []string{
		testBinary(t, dir, 1, "./test/cgroupv2/inguest"),
		testBinary(t, dir, 2, "./test/failclosed"),
	}
	g := boot(t, binaries.Dir(t), "", tests...)
	t.Logf("guest kernel %s, cgroup mounts %q", g.kernel, g.mounts)
	t.Run("cgroup2-only", func(t *testing.T) {
		if g.kernel == "" {
			t.Error("the guest did not name its kernel")
		}
		if len(g.mounts) == 0 {
			t.Error("the guest mounted no cgroup filesystem")
		}
		for _, m := range g.mounts {
			if !strings.HasPrefix(m, "cgroup2 ") {
				t.Errorf("the guest has a cgroup filesystem other than cgroup2: %s", m)
			}
		}
	})
	for _, name := range []string{"inguest", "failclosed"} {
		b := g.binary(name)
		t.Run(name, func(t *testing.T) {
			if b == nil {
				t.Fatalf("the guest never began %s", name)
			}
			t.Logf("%s: exit %s after %s s in the guest", name, b.status, b.seconds)
			b.report(t)
		})
	}
}

// TestMisreadSwapFails: a bulkhead built with the tag bulkhead_misread_swap
// takes memory.swap.max for memory plus swap. The guest's tests must catch
// it: the reader disagrees with the files, and a backend that gives the
// container as much swap as memory gets through create.
func TestMisreadSwapFails(t *testing.T) {
	needGuest(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	goBuild(t, nil, "build", "-tags", "bulkhead_misread_swap", "-o", filepath.Join(bin, "bulkhead"), "./cmd/bulkhead")
	// The static programs bulkhead hands the sandbox, as built for the
	// suite.
	for _, name := range []string{"bulkhead-probe", "bulkhead-seccomp-exec"} {
		data, err := os.ReadFile(filepath.Join(binaries.Dir(t), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	test := testBinary(t, dir, 1, "./test/cgroupv2/inguest", "bulkhead_misread_swap")
	g := boot(t, bin, "^(TestLimitsFromV2Files|TestLiarFailsClosed)$/^(default|swap)$", test)
	b := g.binary("inguest")
	if b == nil {
		t.Fatal("the guest never began inguest")
	}
	for _, name := range []string{"TestLimitsFromV2Files/default", "TestLiarFailsClosed/swap"} {
		tr := b.tests[name]
		switch {
		case tr == nil:
			t.Errorf("%s did not run in the guest", name)
		case tr.result != "FAIL":
			t.Errorf("%s: %q with a reader that misreads memory.swap.max, want FAIL:\n%s", name, tr.result, strings.Join(tr.lines, "\n"))
		default:
			t.Logf("%s failed, as it must:\n%s", name, strings.Join(tr.lines, "\n"))
		}
	}
	if b.status == "0" {
		t.Errorf("inguest exited 0 in the guest with a misreading reader")
	}
}
