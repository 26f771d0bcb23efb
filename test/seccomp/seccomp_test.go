// Package seccomp_test runs real containers through bulkhead and checks,
// from inside, what the seccomp profile does: every denied syscall gets
// EPERM, clone3 ENOSYS, ordinary programs keep working, on runc and on
// runsc; and a profile that does not load leaves nothing behind.
//
// Everything here needs root and the backends; tests skip, saying why,
// when they are absent.
package seccomp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"

	"bulkhead.dev/bulkhead/seccomp"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/leftover"
)

// backends are the two a profile can name; entry is the binary name the
// engine would call.
var backends = []struct{ name, entry string }{
	{"runc", "bulkhead"},
	{"runsc", "bulkhead-runsc"},
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	binaries.NeedRoot(t, tools...)
}

var seq atomic.Int64

// env is one test's bulkhead set-up: a state root and a configuration
// whose audit log stays in the test's directory.
type env struct {
	t      *testing.T
	dir    string
	root   string
	config string
}

func newEnv(t *testing.T, extraConfig string) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, root: filepath.Join(dir, "root"), config: filepath.Join(dir, "config.toml")}
	cfg := fmt.Sprintf("audit_log = %q\n%s", filepath.Join(dir, "audit.jsonl"), extraConfig)
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// id is a container id unique in this test process, so that parallel runs
// never share a cgroup.
func (e *env) id() string {
	name := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(e.t.Name(), "-")
	return fmt.Sprintf("sc-%s-%d-%d", strings.ToLower(name), os.Getpid(), seq.Add(1))
}

type result struct {
	stdout, stderr string
	code           int
}

// bulkhead runs entry (bulkhead or bulkhead-runsc) with the env's root
// and config.
func (e *env) bulkhead(entry string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := append([]string{"--root", e.root, "--config", e.config}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(binaries.Dir(e.t), entry), argv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("%s %v: %v", entry, argv, err)
	}
	if ctx.Err() != nil {
		e.t.Fatalf("%s %v: no exit after 2 minutes", entry, argv)
	}
	return result{out.String(), errb.String(), code}
}

// run runs the bundle to completion through bulkhead and returns what the
// container printed; a non-zero exit fails the test.
func (e *env) run(entry, b string, extra ...string) string {
	e.t.Helper()
	id := e.id()
	e.t.Cleanup(func() { e.bulkhead(entry, "delete", "--force", id) })
	args := append(append([]string{}, extra...), "run", "--bundle", b, id)
	r := e.bulkhead(entry, args...)
	if r.code != 0 {
		e.t.Fatalf("%s run: exit %d\nstdout:\n%s\nstderr:\n%s", entry, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// probeBundle is a busybox bundle with the static probe in /bin running
// `bulkhead-probe -only seccomp`.
func probeBundle(t *testing.T, mutate ...func(*rspec.Spec)) string {
	t.Helper()
	b := bundle.New(t, []string{"/bin/bulkhead-probe", "-only", "seccomp"}, mutate...)
	copyFile(t, binaries.Probe(t), filepath.Join(b, "rootfs/bin/bulkhead-probe"), 0o755)
	return b
}

// probeRow is one syscall of the probe's seccomp control.
type probeRow struct {
	Name     string `json:"name"`
	Want     string `json:"want"`
	Observed string `json:"observed"`
	Layer    string `json:"layer"`
	Pass     bool   `json:"pass"`
}

type probeLine struct {
	Control  string     `json:"control"`
	Observed string     `json:"observed"`
	Pass     bool       `json:"pass"`
	Detail   string     `json:"detail"`
	Syscalls []probeRow `json:"syscalls"`
}

// parseProbe returns the seccomp line and its rows by name, failing the
// test when the probe did not finish.
func parseProbe(t *testing.T, out string) (probeLine, map[string]probeRow) {
	t.Helper()
	var sc probeLine
	done := false
	sn := bufio.NewScanner(strings.NewReader(out))
	sn.Buffer(make([]byte, 1<<20), 1<<20)
	for sn.Scan() {
		var l probeLine
		if err := json.Unmarshal(sn.Bytes(), &l); err != nil {
			t.Fatalf("probe line %q: %v", sn.Text(), err)
		}
		switch l.Control {
		case "seccomp":
			sc = l
		case "done":
			done = true
		}
	}
	if !done || sc.Control == "" {
		t.Fatalf("probe did not report seccomp and done:\n%s", out)
	}
	rows := map[string]probeRow{}
	for _, r := range sc.Syscalls {
		rows[r.Name] = r
	}
	return sc, rows
}

// checkProbe asserts the rows the policy promises, by name, on top of the
// probe's own verdict, so that a change in the probe's table cannot make
// this test pass vacuously.
func checkProbe(t *testing.T, out string) map[string]probeRow {
	t.Helper()
	sc, rows := parseProbe(t, out)
	want := map[string]string{
		"clone3": "ENOSYS", "read": "EBADF", "write": "EBADF", "openat": "ENOENT",
		"socket(AF_INET)": "ok", "socket(AF_UNIX)": "ok",
		"clone(NEWUSER|NEWNS)": "EPERM", "socket(AF_ALG)": "EPERM", "socket(AF_VSOCK)": "EPERM",
		"fcntl(F_SETLEASE)": "EPERM", "fcntl(F_SETDELEG)": "EPERM", "fcntl(F_GETFL)": "EBADF",
	}
	deniedProbed := 0
	for _, name := range seccomp.Denied {
		if _, ok := rows[name]; ok {
			want[name] = "EPERM"
			deniedProbed++
		}
	}
	if deniedProbed < 30 {
		t.Errorf("the probe tried only %d of the %d names in seccomp.Denied", deniedProbed, len(seccomp.Denied))
	}
	for name, w := range want {
		r, ok := rows[name]
		if !ok {
			t.Errorf("probe has no row %s", name)
			continue
		}
		if r.Observed != w {
			t.Errorf("%s: %s, want %s", name, r.Observed, w)
		}
	}
	if !sc.Pass {
		t.Errorf("probe verdict: %s (%s)", sc.Detail, sc.Observed)
	}
	return rows
}

// TestProbeThroughBulkhead: the probe's syscall table inside a container
// created through bulkhead, on each backend.
func TestProbeThroughBulkhead(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			need(t, be.name)
			e := newEnv(t, "")
			out := e.run(be.entry, probeBundle(t))
			checkProbe(t, out)
			sc, _ := parseProbe(t, out)
			if be.name == "runc" && sc.Observed != "Seccomp: 2" {
				t.Errorf("runc: %q, want /proc/self/status Seccomp: 2", sc.Observed)
			}
			if !strings.HasPrefix(strings.TrimPrefix(sc.Observed, "Seccomp: "), "2") {
				t.Errorf("%s: %q, want seccomp filter mode 2", be.name, sc.Observed)
			}
		})
	}
}

// sysprobeC calls each syscall given as NAME:NR with harmless arguments and
// prints "NAME ERRNO"; then a raw clone without namespace flags.
const sysprobeC = `
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		char *colon = strchr(argv[i], ':');
		if (!colon) return 2;
		*colon = 0;
		long nr = strtol(colon + 1, NULL, 10);
		/* -1 everywhere: a bad fd, flags or pointer the kernel refuses
		   before doing anything, should a call get past seccomp. */
		long r = syscall(nr, -1L, -1L, -1L, -1L, -1L, -1L);
		printf("%s %s\n", argv[i], r == -1 ? strerrorname_np(errno) : "ok");
	}
	long pid = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
	if (pid == 0) _exit(3);
	if (pid < 0) { printf("clone(SIGCHLD) %s\n", strerrorname_np(errno)); return 0; }
	int st = 0;
	waitpid(pid, &st, 0);
	printf("clone(SIGCHLD) %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 3 ? "ok" : "bad child");
	return 0;
}
`

// threadsC spawns threads (glibc >= 2.34 tries clone3 first and falls back
// to clone on ENOSYS), calls select (pselect6) and forks.
const threadsC = `
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

static void *work(void *arg) { *(long *)arg *= 2; return NULL; }

int main(void) {
	long v[4] = {1, 2, 3, 4};
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		int e = pthread_create(&t[i], NULL, work, &v[i]);
		if (e) { printf("pthread_create: %s\n", strerrorname_np(e)); return 1; }
	}
	for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
	printf("threads %ld %ld %ld %ld\n", v[0], v[1], v[2], v[3]);
	struct timeval tv = {0, 1000};
	int r = select(0, NULL, NULL, NULL, &tv);
	printf("select %s\n", r < 0 ? strerrorname_np(errno) : "ok");
	pid_t p = fork();
	if (p == 0) _exit(7);
	int st = 0;
	waitpid(p, &st, 0);
	printf("fork exit %d\n", WEXITSTATUS(st));
	return 0;
}
`

// compileC builds src with gcc into dir/name (dynamically linked) and
// copies it into rootfs/bin with every library ldd lists, the dynamic
// loader included, at the same paths.
func compileC(t *testing.T, rootfs, name, src string, flags ...string) {
	t.Helper()
	need(t, "gcc", "ldd")
	dir := t.TempDir()
	srcPath := filepath.Join(dir, name+".c")
	if err := os.WriteFile(srcPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	args := append([]string{"-O2", "-o", bin, srcPath}, flags...)
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, out)
	}
	copyFile(t, bin, filepath.Join(rootfs, "bin", name), 0o755)
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", bin, err)
	}
	// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and
	// "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
	libs := 0
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if !strings.HasPrefix(f, "/") {
				continue
			}
			if err := bundle.AddFile(rootfs, f); err != nil {
				t.Fatalf("copy %s into the rootfs: %v", f, err)
			}
			libs++
		}
	}
	if libs < 2 {
		t.Fatalf("ldd %s listed %d files, want libc and the loader:\n%s", bin, libs, out)
	}
}

// TestEveryDeniedName: every name of seccomp.Denied that is a syscall on
// this architecture answers EPERM inside, also those the probe's table
// lacks, and a clone without namespace flags works.
func TestEveryDeniedName(t *testing.T) {
	var args []string
	for _, name := range seccomp.Denied {
		nr, err := libseccomp.GetSyscallFromName(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if nr < 0 {
			continue // not a syscall here (umount on x86_64)
		}
		args = append(args, fmt.Sprintf("%s:%d", name, nr))
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			need(t, be.name)
			b := bundle.New(t, append([]string{"/bin/sysprobe"}, args...))
			compileC(t, filepath.Join(b, "rootfs"), "sysprobe", sysprobeC)
			out := newEnv(t, "").run(be.entry, b)
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if k, v, ok := strings.Cut(line, " "); ok {
					got[k] = v
				}
			}
			for _, a := range args {
				name, _, _ := strings.Cut(a, ":")
				if got[name] != "EPERM" {
					t.Errorf("%s: %q, want EPERM", name, got[name])
				}
			}
			if got["clone(SIGCHLD)"] != "ok" {
				t.Errorf("clone without namespace flags: %q, want ok", got["clone(SIGCHLD)"])
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// TestRealPrograms: busybox's shell and applets and a dynamically linked
// glibc program with threads keep working under the profile.
func TestRealPrograms(t *testing.T) {
	script := strings.Join([]string{
		`set -e`,
		`echo "pipe $(echo one two three | wc -w)"`,
		`echo "subshell $( (cd /bin && echo $PWD) )"`,
		`sleep 0.1 && echo slept`,
		`echo "sort $(printf 'c\nb\na\n' | sort | head -n 1)"`,
		`echo "find $(find / -xdev -name busybox 2>/dev/null | head -n 1)"`,
		`echo "threads: $(/bin/threads | tr '\n' ';')"`,
		`echo done`,
	}, "\n")
	want := []string{
		"pipe 3", "subshell /bin", "slept", "sort a", "find /bin/busybox",
		"threads: threads 2 4 6 8;select ok;fork exit 7;", "done",
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			need(t, be.name)
			b := bundle.New(t, []string{"/bin/sh", "-c", script})
			compileC(t, filepath.Join(b, "rootfs"), "threads", threadsC, "-pthread")
			out := newEnv(t, "").run(be.entry, b)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if !slices.Equal(lines, want) {
				t.Errorf("output:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
			}
		})
	}
}

// TestCallerCannotWeaken: a spec without seccomp, or with a filter that
// allows everything, still gets the default profile.
func TestCallerCannotWeaken(t *testing.T) {
	need(t, "runc")
	cases := map[string]func(*rspec.Spec){
		"no seccomp": func(s *rspec.Spec) { s.Linux.Seccomp = nil },
		"allow all": func(s *rspec.Spec) {
			s.Linux.Seccomp = &rspec.LinuxSeccomp{
				DefaultAction: rspec.ActAllow,
				Architectures: []rspec.Arch{rspec.ArchX86_64, rspec.ArchAARCH64},
				Syscalls:      []rspec.LinuxSyscall{{Names: []string{"unshare", "keyctl", "clone3"}, Action: rspec.ActAllow}},
			}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			out := newEnv(t, "").run("bulkhead", probeBundle(t, mutate))
			rows := checkProbe(t, out)
			for _, n := range []string{"unshare", "keyctl"} {
				if rows[n].Observed != "EPERM" || rows[n].Layer != "seccomp" {
					t.Errorf("%s: %s (layer %q), want EPERM from seccomp", n, rows[n].Observed, rows[n].Layer)
				}
			}
		})
	}
}

// TestBadProfileLeavesNothing: an operator profile that does not load
// makes create fail with a message naming the problem, and leaves no
// state, cgroup, container or changed config.json behind.
func TestBadProfileLeavesNothing(t *testing.T) {
	need(t, "runc")
	dir := t.TempDir()
	misspelt := filepath.Join(dir, "misspelt.json")
	writeJSON(t, misspelt, map[string]any{
		"defaultAction": "SCMP_ACT_ERRNO",
		"syscalls":      []any{map[string]any{"names": []string{"read", "write", "opnat"}, "action": "SCMP_ACT_ALLOW"}},
	})
	// 1500 conditions on distinct 64-bit values: more BPF than the kernel
	// loads (about 6000 instructions).
	var rules []any
	for i := 0; i < 1500; i++ {
		rules = append(rules, map[string]any{"names": []string{"personality"}, "action": "SCMP_ACT_ALLOW",
			"args": []any{map[string]any{"index": 0, "op": "SCMP_CMP_EQ", "value": uint64(i)<<32 | uint64(i*7919+100)}}})
	}
	oversized := filepath.Join(dir, "oversized.json")
	writeJSON(t, oversized, map[string]any{"defaultAction": "SCMP_ACT_ERRNO", "architectures": []string{"SCMP_ARCH_X86_64"}, "syscalls": rules})

	cases := []struct{ profile, file, want string }{
		{"misspelt", misspelt, `syscall "opnat": unknown to libseccomp`},
		{"oversized", oversized, "BPF instructions, the kernel accepts at most 4096"},
	}
	for _, tc := range cases {
		t.Run(tc.profile, func(t *testing.T) {
			e := newEnv(t, fmt.Sprintf("[profiles.%s]\nseccomp = %q\n", tc.profile, tc.file))
			b := bundle.New(t, []string{"true"})
			before := snapshot(t, b)
			id := e.id()
			r := e.bulkhead("bulkhead", "--profile", tc.profile, "create", "--bundle", b, id)
			if r.code == 0 {
				e.bulkhead("bulkhead", "delete", "--force", id)
				t.Fatalf("create with profile %s succeeded", tc.profile)
			}
			if !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, tc.file) {
				t.Errorf("stderr %q does not name %q and the file %s", r.stderr, tc.want, tc.file)
			}
			if after := snapshot(t, b); after != before {
				t.Errorf("bundle changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			for _, p := range []string{
				filepath.Join(e.root, "bulkhead", id),
				filepath.Join(e.root, "runc", id),
			} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s left behind", p)
				}
			}
			if cg, left := leftover.Cgroup(b, e.root, id); left {
				t.Errorf("cgroup %s left behind", cg)
			}
			if out, err := exec.Command("runc", "--root", filepath.Join(e.root, "runc"), "list", "-q").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
				t.Errorf("runc still lists %q", out)
			}
			if r := e.bulkhead("bulkhead", "state", id); r.code == 0 {
				t.Errorf("bulkhead state %s succeeds after a refused create: %s", id, r.stdout)
			}
		})
	}
}

// snapshot lists every file of the bundle with its size and, for
// config.json, its contents.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, "rootfs/") && fi.Mode()&os.ModeSymlink != 0 {
			return nil // busybox's applet links
		}
		fmt.Fprintf(&b, "%s %v %d\n", rel, fi.Mode(), fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	b.Write(data)
	return b.String()
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, perm); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRunTrue times `bulkhead run` of `true` on runc with the
// seccomp compile cached (the normal case after the first create) and
// with the cache emptied before every run.
func BenchmarkRunTrue(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		b.Skip("needs runc")
	}
	bin := binaries.Bulkhead(b)
	bdir := b.TempDir()
	if err := bundle.Make(bdir, []string{"true"}); err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(bdir, "bench.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("audit_log = %q\n", filepath.Join(bdir, "audit.jsonl"))), 0o644); err != nil {
		b.Fatal(err)
	}
	root := filepath.Join(bdir, "root")
	for _, mode := range []string{"cached", "uncached"} {
		b.Run(mode, func(b *testing.B) {
			n := 0
			for b.Loop() {
				if mode == "uncached" {
					b.StopTimer()
					os.RemoveAll(seccomp.DefaultCacheDir)
					b.StartTimer()
				}
				n++
				id := fmt.Sprintf("bench-%d-%s-%d", os.Getpid(), mode, n)
				out, err := exec.Command(bin, "--root", root, "--config", cfg, "run", "--bundle", bdir, id).CombinedOutput()
				if err != nil {
					b.Fatalf("run: %v\n%s", err, out)
				}
			}
		})
	}
}

// TestCallersNarrowerKept: a caller's own filter that denies what the
// policy allows (critest's localhost profile, which blocks chmod) is kept
// inside the policy's, and create's verification recognises the combined
// filter in the kernel (run fails closed otherwise). Without the caller's
// filter the same chmod works, so the test can fail.
func TestCallersNarrowerKept(t *testing.T) {
	need(t, "runc")
	script := []string{"/bin/sh", "-c", "touch /tmp/f; if chmod 600 /tmp/f 2>/dev/null; then echo chmod-ok; else echo chmod-denied; fi; echo data >/tmp/g && echo write-ok"}
	blockChmod := func(s *rspec.Spec) {
		s.Linux.Seccomp = &rspec.LinuxSeccomp{DefaultAction: rspec.ActAllow,
			Syscalls: []rspec.LinuxSyscall{{Names: []string{"chmod", "fchmodat", "fchmodat2"}, Action: rspec.ActErrno}}}
	}
	for name, c := range map[string]struct {
		mutate func(*rspec.Spec)
		want   string
	}{
		"caller blocks chmod": {blockChmod, "chmod-denied\nwrite-ok\n"},
		"no caller filter":    {func(s *rspec.Spec) { s.Linux.Seccomp = nil }, "chmod-ok\nwrite-ok\n"},
	} {
		t.Run(name, func(t *testing.T) {
			out := newEnv(t, "").run("bulkhead", bundle.New(t, script, c.mutate))
			if out != c.want {
				t.Fatalf("container printed %q, want %q", out, c.want)
			}
		})
	}
}

// condsC tries the calls the policy allows only under conditions, with
// arguments the conditions refuse, and a plain clone that they allow.
const condsC = `
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char *what, long r) {
	if (r < 0) printf("%s %s\n", what, errno == EPERM ? "EPERM" : strerror(errno));
	else printf("%s ok\n", what);
}

static long try_clone(long flags) {
	long r = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
	if (r == 0) _exit(0);
	if (r > 0) waitpid(r, 0, 0);
	return r;
}

int main(void) {
	report("clone(SIGCHLD)", try_clone(0));
	report("clone(CLONE_NEWUSER|CLONE_NEWNS)", try_clone(CLONE_NEWUSER | CLONE_NEWNS));
	report("socket(AF_ALG)", syscall(SYS_socket, 38, 5, 0));
	report("personality(ADDR_NO_RANDOMIZE)", syscall(SYS_personality, 0x0400000));
	return 0;
}
`

// TestCallerCannotLiftConditions: a caller's filter that lists, for the
// calls the policy allows only under conditions, an allow next to a
// denial denies them; it never lifts the policy's conditions. Under runsc
// no host check sees the filter gVisor applies, so what the container
// meets is the evidence. Without the caller's filter the plain clone
// works, so the program can tell an allowed call from a denied one.
func TestCallerCannotLiftConditions(t *testing.T) {
	names := []string{"clone", "socket", "personality"}
	lift := func(s *rspec.Spec) {
		s.Linux.Seccomp = &rspec.LinuxSeccomp{DefaultAction: rspec.ActAllow, Syscalls: []rspec.LinuxSyscall{
			{Names: names, Action: rspec.ActAllow}, {Names: names, Action: rspec.ActErrno}}}
	}
	denied := []string{"clone(CLONE_NEWUSER|CLONE_NEWNS) EPERM", "socket(AF_ALG) EPERM", "personality(ADDR_NO_RANDOMIZE) EPERM"}
	cases := []struct {
		name   string
		mutate func(*rspec.Spec)
		want   []string
	}{
		{"allow next to a denial", lift, append([]string{"clone(SIGCHLD) EPERM"}, denied...)},
		{"no caller filter", func(s *rspec.Spec) { s.Linux.Seccomp = nil }, append([]string{"clone(SIGCHLD) ok"}, denied...)},
	}
	for _, be := range backends {
		for _, c := range cases {
			t.Run(be.name+"/"+c.name, func(t *testing.T) {
				need(t, be.name)
				b := bundle.New(t, []string{"/bin/conds"}, c.mutate)
				compileC(t, filepath.Join(b, "rootfs"), "conds", condsC)
				out := newEnv(t, "").run(be.entry, b)
				if lines := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(lines, c.want) {
					t.Errorf("output:\n%s\nwant:\n%s", out, strings.Join(c.want, "\n"))
				}
			})
		}
	}
}

// cProgram builds testdata/<name>.c, static, into the bundle b's rootfs
// as /bin/<name>.
func cProgram(t *testing.T, b, name string) {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc is needed to build testdata/%s.c (hack/install-deps.sh installs it): %v", name, err)
	}
	if out, err := exec.Command(gcc, "-static", "-O2", "-o", filepath.Join(b, "rootfs/bin", name), "testdata/"+name+".c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
}
