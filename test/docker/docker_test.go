// Package docker tests bulkhead behind a real dockerd: a private dockerd
// and containerd (test/engine) with runtimes bulkhead and bulkhead-runsc,
// and a locally imported busybox image that carries bulkhead-probe. Every
// docker verb goes through bulkhead exactly as it does in production.
package docker

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/probeout"
)

// TestProbeWhateverTheFlags runs the boundary probe with the flags callers
// use to widen a container and a workspace bound at /workspace. The README
// promises the boundary whatever the flags: each must run and hold every
// control; a refusal fails.
func TestProbeWhateverTheFlags(t *testing.T) {
	d := daemon(t)
	for _, flags := range [][]string{
		nil,
		{"--network", "host"},
		{"--privileged"},
		{"--user", "0"},
		{"--cap-add", "ALL"},
		{"--security-opt", "seccomp=unconfined"},
		{"--pids-limit", "100000", "--memory", "8g"},
	} {
		name := strings.Join(flags, " ")
		if name == "" {
			name = "no flags"
		}
		t.Run(name, func(t *testing.T) {
			ws := probeout.NewWorkspace(t)
			args := append([]string{"run", "--rm", "--runtime=bulkhead", "-v", ws.Dir + ":/workspace"}, flags...)
			out := probeout.UntilEvidence(t, ws, func(int) string {
				r := d.Run(t, append(args, image, "bulkhead-probe")...)
				if rule, ok := refusal(r); ok {
					t.Fatalf("refused by rule %s, but the boundary is promised with these flags: %s", rule, strings.TrimSpace(r.Stderr))
				}
				if r.Code != 0 {
					t.Fatalf("%s\ndockerd log:\n%s", r, d.LogTail(10))
				}
				return r.Stdout
			})
			probeout.AssertPasses(t, out, ws)
		})
	}
}

// TestDefaultBridgeLoopbackOnly: on Docker's default bridge network a
// runc container gets eth0 (the harness's bridge is real), a bulkhead
// container only lo.
func TestDefaultBridgeLoopbackOnly(t *testing.T) {
	d := daemon(t)
	if d.Bridge == "" {
		t.Skip("harness runs without a bridge")
	}
	if out := d.Must(t, "run", "--rm", "--runtime=runc", image, "ls", "/sys/class/net"); !strings.Contains(out, "eth0") {
		t.Fatalf("control: a runc container on the bridge has no eth0: %q", out)
	}
	if out := d.Must(t, "run", "--rm", "--runtime=bulkhead", image, "ls", "/sys/class/net"); strings.Fields(out)[0] != "lo" || len(strings.Fields(out)) != 1 {
		t.Errorf("bulkhead container interfaces %q, want only lo", out)
	}
}

// TestExecIsPoliced: docker exec, however privileged it asks to be, gets
// what the container's init got: no capabilities, no root, no_new_privs,
// no secrets in its environment.
func TestExecIsPoliced(t *testing.T) {
	d := daemon(t)
	id := d.Must(t, "run", "-d", "--runtime=bulkhead", "-e", "GITHUB_TOKEN=x", "-e", "AWS_SECRET_ACCESS_KEY=y",
		"-e", "HARMLESS=visible", image, "sleep", "300")
	t.Cleanup(func() { d.Run(t, "rm", "-f", id) })

	for _, flags := range [][]string{nil, {"-u", "0"}, {"--privileged"}, {"--privileged", "-u", "0:0"}, {"-e", "NPM_TOKEN=z"}} {
		t.Run(strings.Join(append([]string{"exec"}, flags...), " "), func(t *testing.T) {
			args := append([]string{"exec"}, flags...)
			out := d.Must(t, append(args, id, "sh", "-c", "cat /proc/self/status; echo ENV; env")...)
			for _, f := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if v := statusField(out, f); v != "0000000000000000" {
					t.Errorf("%s = %q, want 0", f, v)
				}
			}
			if uid := strings.Fields(statusField(out, "Uid")); len(uid) == 0 || uid[0] == "0" || uid[1] == "0" {
				t.Errorf("Uid %v: exec runs as root", uid)
			}
			if v := statusField(out, "NoNewPrivs"); v != "1" {
				t.Errorf("NoNewPrivs = %q, want 1", v)
			}
			_, env, _ := strings.Cut(out, "ENV\n")
			for _, secret := range []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "NPM_TOKEN"} {
				if strings.Contains(env, secret) {
					t.Errorf("secret %s reached the exec'd process:\n%s", secret, env)
				}
			}
			if !strings.Contains(env, "HARMLESS=visible") {
				t.Errorf("an ordinary variable was dropped too:\n%s", env)
			}
		})
	}

	t.Run("exec -d", func(t *testing.T) {
		d.Must(t, "exec", "-d", id, "sh", "-c", "id -u > /tmp/detached")
		if !engine.Eventually(5*time.Second, func() bool { return d.Run(t, "exec", id, "cat", "/tmp/detached").Stdout == "65534\n" }) {
			t.Errorf("detached exec did not run as 65534: %s", d.Run(t, "exec", id, "cat", "/tmp/detached"))
		}
	})
	// A workdir below /tmp, which the job may write, reaches runc as the
	// directory bulkhead judged, handed open through the shim's exec.
	t.Run("exec -w", func(t *testing.T) {
		d.Must(t, "exec", id, "mkdir", "-p", "/tmp/wd/sub")
		if out := d.Run(t, "exec", "-w", "/tmp/wd/sub", id, "sh", "-c", "pwd; readlink /proc/$$/fd/3"); out.Stdout != "/tmp/wd/sub\n/tmp/wd/sub\n" {
			t.Errorf("exec -w /tmp/wd/sub: want its cwd and the directory handed as descriptor 3: %s", out)
		}
	})
	t.Run("exec -it", func(t *testing.T) {
		out := inTTY(t, d, "docker exec -it -u 0 "+id+" sh -c 'tty; id -u'")
		if !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "65534") {
			t.Errorf("exec -it: %q, want a pts and uid 65534", out)
		}
	})
}

// TestLifecycle drives every docker verb a container's life uses.
func TestLifecycle(t *testing.T) {
	d := daemon(t)

	t.Run("run -it gives a tty", func(t *testing.T) {
		out := inTTY(t, d, "docker run --rm -it --runtime=bulkhead "+image+" tty")
		if !strings.Contains(out, "/dev/pts/0") {
			t.Errorf("tty printed %q, want /dev/pts/0", out)
		}
	})
	t.Run("exit status", func(t *testing.T) {
		if r := d.Run(t, "run", "--rm", "--runtime=bulkhead", image, "sh", "-c", "exit 7"); r.Code != 7 {
			t.Errorf("exit status %d, want 7\n%s", r.Code, r)
		}
	})

	script := `trap 'echo got-usr1' USR1; trap 'echo got-term; exit 0' TERM; echo started; while :; do sleep 0.1; done`
	id := d.Must(t, "run", "-d", "--runtime=bulkhead", image, "sh", "-c", script)
	t.Cleanup(func() { d.Run(t, "rm", "-f", id) })
	logsContain := func(s string) bool { return strings.Contains(d.Run(t, "logs", id).Stdout, s) }
	if !engine.Eventually(5*time.Second, func() bool { return logsContain("started") }) {
		t.Fatalf("docker logs: %s", d.Run(t, "logs", id))
	}
	if out := d.Must(t, "top", id); !strings.Contains(out, "nobody") && !strings.Contains(out, "65534") {
		t.Errorf("docker top shows no process of uid 65534:\n%s", out)
	}

	d.Must(t, "pause", id)
	if s := d.Must(t, "inspect", "-f", "{{.State.Status}}", id); s != "paused" {
		t.Errorf("after pause: %s", s)
	}
	d.Must(t, "unpause", id)
	if s := d.Must(t, "inspect", "-f", "{{.State.Status}}", id); s != "running" {
		t.Errorf("after unpause: %s", s)
	}

	d.Must(t, "kill", "-s", "USR1", id)
	if !engine.Eventually(5*time.Second, func() bool { return logsContain("got-usr1") }) {
		t.Errorf("USR1 did not reach the container: %s", d.Run(t, "logs", id))
	}
	for _, sig := range []string{"HUP", "WINCH", "CONT"} {
		d.Must(t, "kill", "-s", sig, id)
	}

	start := time.Now()
	d.Must(t, "stop", "-t", "20", id)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("docker stop took %s: SIGTERM did not reach the trap", took)
	}
	if s := d.Must(t, "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", id); s != "exited 0" {
		t.Errorf("after stop: %s", s)
	}
	if !logsContain("got-term") {
		t.Errorf("stop did not deliver SIGTERM: %s", d.Run(t, "logs", id))
	}

	d.Must(t, "start", id)
	if s := d.Must(t, "inspect", "-f", "{{.State.Status}}", id); s != "running" {
		t.Errorf("after start: %s", s)
	}
	pid, _ := strconv.Atoi(d.Must(t, "inspect", "-f", "{{.State.Pid}}", id))
	cg := cgroupDir(t, pid, "pids")
	d.Must(t, "rm", "-f", id)
	if out := d.Run(t, "ps", "-aq", "--no-trunc").Stdout; strings.Contains(out, id) {
		t.Errorf("rm -f left the container: %s", out)
	}
	if l := bulkheadList(t, d); strings.Contains(l, id) {
		t.Errorf("bulkhead still lists %s:\n%s", id, l)
	}
	if _, err := os.Stat(cg); !os.IsNotExist(err) {
		t.Errorf("cgroup %s left after rm -f: %v", cg, err)
	}
}

// TestUpdateClamped: docker update cannot raise a container past the
// profile's ceilings. Docker's own view (inspect) records what was asked;
// the cgroup is what holds.
func TestUpdateClamped(t *testing.T) {
	d := daemon(t)
	id := d.Must(t, "run", "-d", "--runtime=bulkhead", image, "sleep", "300")
	t.Cleanup(func() { d.Run(t, "rm", "-f", id) })
	pid, err := strconv.Atoi(d.Must(t, "inspect", "-f", "{{.State.Pid}}", id))
	if err != nil {
		t.Fatal(err)
	}
	// --memory-swap too: on cgroup v1 dockerd itself refuses --memory alone
	// for a container created without limits, whatever the runtime.
	d.Must(t, "update", "--memory", "1g", "--memory-swap", "2g", "--pids-limit", "100000", "--cpus", "2", id)
	d.Must(t, "update", "--pids-limit", "-1", id)

	if got := readTrim(t, filepath.Join(cgroupDir(t, pid, "pids"), "pids.max")); got != "64" {
		t.Errorf("pids.max = %s, want 64", got)
	}
	mem := cgroupDir(t, pid, "memory")
	limitFile := "memory.limit_in_bytes"
	if _, err := os.Stat(filepath.Join(mem, limitFile)); err != nil {
		limitFile = "memory.max"
	}
	if got := readTrim(t, filepath.Join(mem, limitFile)); got != strconv.Itoa(256<<20) {
		t.Errorf("%s = %s, want %d", limitFile, got, 256<<20)
	}
	cpu := cgroupDir(t, pid, "cpu")
	if b, err := os.ReadFile(filepath.Join(cpu, "cpu.cfs_quota_us")); err == nil {
		if q := strings.TrimSpace(string(b)); q != "100000" {
			t.Errorf("cpu.cfs_quota_us = %s, want 100000", q)
		}
	} else if got := readTrim(t, filepath.Join(cpu, "cpu.max")); got != "100000 100000" {
		t.Errorf("cpu.max = %s, want 100000 100000", got)
	}
}

// TestRefusedMountsLeaveNothing: engine sockets and home directories are
// refused; docker shows bulkhead's rule, and no container, shim, cgroup or
// state is left.
func TestRefusedMountsLeaveNothing(t *testing.T) {
	d := daemon(t)
	// A local volume that is a bind of the host's /etc: its path is under
	// dockerd's volume directory, what is mounted there is /etc.
	d.Must(t, "volume", "create", "--driver", "local", "--opt", "type=none", "--opt", "o=bind", "--opt", "device=/etc", "bh-etc")
	defer d.Run(t, "volume", "rm", "bh-etc")
	mounts := []string{d.Socket + ":/var/run/docker.sock", "/root:/x", "bh-etc:/data"}
	if st, err := os.Stat("/var/run/docker.sock"); err == nil && st.Mode()&os.ModeSocket != 0 {
		mounts = append(mounts, "/var/run/docker.sock:/var/run/docker.sock")
	}
	type attempt struct {
		mount string
		rm    bool
	}
	var attempts []attempt
	for _, m := range mounts {
		attempts = append(attempts, attempt{m, true})
	}
	// Without --rm dockerd keeps its own record of a container whose start
	// failed (state "created", as it does for any runtime's failure) until
	// docker rm; bulkhead's side must be gone all the same.
	attempts = append(attempts, attempt{"/root:/x", false})
	for _, a := range attempts {
		name := a.mount
		if !a.rm {
			name += " without --rm"
		}
		t.Run(name, func(t *testing.T) {
			cidFile := filepath.Join(t.TempDir(), "cid")
			args := []string{"run", "--cidfile", cidFile, "--runtime=bulkhead", "-v", a.mount, image, "true"}
			if a.rm {
				args = append([]string{"run", "--rm"}, args[1:]...)
			}
			r := d.Run(t, args...)
			rule, ok := refusal(r)
			if !ok || r.Code != 125 {
				t.Fatalf("not refused by a bulkhead rule:\n%s", r)
			}
			if rule != "host_mounts" {
				t.Errorf("refused by rule %q, want host_mounts", rule)
			}
			t.Logf("docker says: %s", strings.TrimSpace(strings.Split(r.Stderr, "\n")[0]))
			cid, err := os.ReadFile(cidFile)
			if err != nil || len(cid) < 12 {
				t.Fatalf("no container id in --cidfile: %v", err)
			}
			id := string(cid)
			gone := func() {
				if !engine.Eventually(10*time.Second, func() bool { return !strings.Contains(d.Run(t, "ps", "-aq", "--no-trunc").Stdout, id) }) {
					t.Errorf("docker ps -a still has %s: %s", id, d.Run(t, "ps", "-a"))
				}
			}
			if a.rm {
				gone()
			} else {
				if s := d.Must(t, "inspect", "-f", "{{.State.Status}}", id); s != "created" {
					t.Errorf("dockerd's record is %q, want created", s)
				}
				defer gone()
				defer d.Must(t, "rm", id)
			}
			if !engine.Eventually(10*time.Second, func() bool { return len(engine.ProcessesMentioning(id)) == 0 }) {
				t.Errorf("processes left for %s: %v", id, engine.ProcessesMentioning(id))
			}
			if dirs := cgroupDirsNamed(id); len(dirs) > 0 {
				t.Errorf("cgroups left: %v", dirs)
			}
			if l := bulkheadList(t, d); strings.Contains(l, id) {
				t.Errorf("bulkhead still lists %s", id)
			}
			for _, dir := range []string{filepath.Join(d.RuntimeRoot(), "bulkhead", id), filepath.Join(d.RuntimeRoot(), "runc", id), d.BundleDir(id)} {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("%s left behind: %v", dir, err)
				}
			}
		})
	}
}

// TestBackendReasonReachesDocker: when the backend itself fails, docker
// shows bulkhead's line (the last error line of the log), which must carry
// the backend's reason. Raising RLIMIT_NOFILE above root's hard limit needs
// CAP_SYS_RESOURCE, which root lacks on this project's hosts (runc fails
// the same way without bulkhead).
func TestBackendReasonReachesDocker(t *testing.T) {
	d := daemon(t)
	r := d.Run(t, "run", "--rm", "--runtime=bulkhead", "--ulimit", "nofile=4000000:4000000", image, "true")
	if r.Code == 0 {
		t.Skip("this host lets root raise RLIMIT_NOFILE: the backend does not fail")
	}
	if !strings.Contains(r.Stderr, "bulkhead: backend create exited with status 1: ") || !strings.Contains(r.Stderr, "rlimit") {
		t.Errorf("docker does not show the backend's reason:\n%s", r)
	}
	t.Logf("docker says: %s", strings.TrimSpace(strings.Split(r.Stderr, "\n")[0]))
}

// TestWorkspaceHostFolderUnchanged: a writable -v HOSTDIR:/workspace does
// not let the container change the host folder.
func TestWorkspaceHostFolderUnchanged(t *testing.T) {
	d := daemon(t)
	host := t.TempDir()
	for name, content := range map[string]string{"a": "original a\n", "b": "original b\n", "sub/c": "original c\n"} {
		p := filepath.Join(host, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	// World-writable, so that only the mount, not file permissions, can
	// stop uid 65534.
	for _, p := range []string{host, filepath.Join(host, "sub"), filepath.Join(host, "a"), filepath.Join(host, "b"), filepath.Join(host, "sub", "c")} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	probeout.GiveToUser(t, host)
	before := treeHash(t, host)
	attack := `echo new > /workspace/new; echo more >> /workspace/a; rm -f /workspace/b; mkdir /workspace/d;
touch /workspace/sub/c; mv /workspace/a /workspace/moved; ln -s / /workspace/root; chmod 0 /workspace/sub; echo attempted`
	r := d.Run(t, "run", "--rm", "--runtime=bulkhead", "-v", host+":/workspace", image, "sh", "-c", attack)
	if !strings.Contains(r.Stdout, "attempted") {
		t.Fatalf("the container did not run:\n%s", r)
	}
	if after := treeHash(t, host); after != before {
		t.Errorf("host folder changed by the container\n%s", r)
	}
	// /workspace is a copy-on-write workspace: the probe's write goes
	// through inside, and the host folder is the judge.
	r = d.Run(t, "run", "--rm", "--runtime=bulkhead", "-v", host+":/workspace", image, "bulkhead-probe", "-only", "workspace")
	if !strings.Contains(r.Stdout, `"observed":"written"`) {
		t.Errorf("the probe could not write its copy-on-write workspace:\n%s", r)
	}
	if after := treeHash(t, host); after != before {
		t.Errorf("host folder changed by the probe")
	}
}

// TestGVisor: --runtime=bulkhead-runsc runs the probe in gVisor, which
// answers some controls its own way: the probe accepts those with -gvisor,
// and where only the host can judge, the host does. cpu: gVisor counts
// host-throttled time as its own, so the host's cpu.stat nr_throttled
// must grow under the 1-CPU quota. memory: past the limit the host OOM
// killer ends the whole sandbox, so the probe tries it after its done line
// (-memory-after-done) and dockerd's OOMKilled is the verdict.
func TestGVisor(t *testing.T) {
	d := daemon(t)
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skip("runsc is not installed")
	}
	ws := probeout.NewWorkspace(t)
	id, code, out, throttled, oomKilled := gvisorProbe(t, d, ws)
	// Every control but memory reports before done; memory runs after it
	// and dockerd's OOMKilled is its verdict. cpu is the host's to judge
	// (gVisor counts throttled time as its own): it holds when the
	// sandbox's cgroup was throttled.
	var beforeDone []string
	for _, c := range protocol.Controls {
		if c != "memory" {
			beforeDone = append(beforeDone, c)
		}
	}
	probeout.AssertControls(t, out, ws, beforeDone, func(l probeout.Line) bool {
		return l.Control == "cpu" && strings.Contains(l.Observed, "not judged: gVisor") && throttled
	})
	// The kernel's word (cgroup v1 here: the sandbox's memory group
	// counted an OOM kill), or dockerd's OOMKilled, which the shim relays
	// from the kernel: dockerd's alone was found unset now and then under
	// runsc (exit 137 all the same), and the kernel's is read in a race
	// with the group's removal.
	kernel := oomKilled != nil && oomKilled()
	if oom := d.Must(t, "inspect", "-f", "{{.State.OOMKilled}}", id); !kernel && oom != "true" {
		t.Errorf("memory: the sandbox was not OOM-killed after done (kernel oom_kill grew: %v, dockerd OOMKilled=%s, exit %s)\n%s", kernel, oom, code, d.Run(t, "logs", id))
	}
	if out := d.Must(t, "run", "--rm", "--runtime=bulkhead-runsc", image, "id", "-u"); out != "65534" {
		t.Errorf("runsc container runs as %q, want 65534", out)
	}
}

// TestGVisorMissingCommandLeavesNothing: runsc looks a command up only
// in start, and dockerd 20.10, once start failed, forgot the created task
// with its shim, cgroups and bulkhead's mounts. bulkhead looks it up in
// create, as runc does, so the run fails there, says why, and leaves
// nothing; a link to itself is as certainly missing.
func TestGVisorMissingCommandLeavesNothing(t *testing.T) {
	d := daemon(t)
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skip("runsc is not installed")
	}
	for _, command := range []string{"no-such-command", "loop"} {
		t.Run(command, func(t *testing.T) {
			cidFile := filepath.Join(t.TempDir(), "cid")
			r := d.Run(t, "run", "--rm", "--cidfile", cidFile, "--runtime=bulkhead-runsc", image, command)
			if r.Code == 0 || !strings.Contains(r.Stderr, "process.args[0]: "+command+" is not") {
				t.Fatalf("a command missing from the image was not refused by name:\n%s", r)
			}
			t.Logf("docker says: %s", strings.TrimSpace(strings.Split(r.Stderr, "\n")[0]))
			assertRunLeftNothing(t, d, cidFile)
		})
	}
}

// TestGVisorFailedStartLeavesNothing: a command runsc's loader cannot run
// (a file with no ELF header and no #! line) passes create and fails in
// start, where runsc left its sandbox running, and dockerd 20.10 forgot
// the task, created, with its shim, cgroups and bulkhead's mounts.
// bulkhead ends the sandbox when start fails, so the task stops and
// dockerd deletes it: nothing is left.
func TestGVisorFailedStartLeavesNothing(t *testing.T) {
	d := daemon(t)
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skip("runsc is not installed")
	}
	cidFile := filepath.Join(t.TempDir(), "cid")
	r := d.Run(t, "run", "--rm", "--cidfile", cidFile, "--runtime=bulkhead-runsc", image, "/bin/no-shebang")
	if r.Code == 0 || !strings.Contains(r.Stderr, "start failed") {
		t.Fatalf("a command runsc cannot load did not fail the start:\n%s", r)
	}
	t.Logf("docker says: %s", strings.TrimSpace(strings.Split(r.Stderr, "\n")[0]))
	assertRunLeftNothing(t, d, cidFile)
}

// assertRunLeftNothing fails t when anything of the container --cidfile
// named is left: in docker, a process, a cgroup, the backends' and
// bulkhead's state, a mount.
func assertRunLeftNothing(t *testing.T, d *engine.Docker, cidFile string) {
	t.Helper()
	cid, err := os.ReadFile(cidFile)
	if err != nil || len(cid) < 12 {
		t.Fatalf("no container id in --cidfile: %v", err)
	}
	id := string(cid)
	if !engine.Eventually(10*time.Second, func() bool { return !strings.Contains(d.Run(t, "ps", "-aq", "--no-trunc").Stdout, id) }) {
		t.Errorf("docker ps -a still has %s: %s", id, d.Run(t, "ps", "-a"))
	}
	if !engine.Eventually(10*time.Second, func() bool { return len(engine.ProcessesMentioning(id)) == 0 }) {
		t.Errorf("processes left for %s: %v", id, engine.ProcessesMentioning(id))
	}
	if !engine.Eventually(10*time.Second, func() bool { return len(cgroupDirsNamed(id)) == 0 }) {
		t.Errorf("cgroups left: %v", cgroupDirsNamed(id))
	}
	left, _ := filepath.Glob(filepath.Join(d.ExecRoot, "runtime-*", "moby", "*", id))
	if _, err := os.Stat(d.BundleDir(id)); !os.IsNotExist(err) {
		left = append(left, d.BundleDir(id))
	}
	if len(left) > 0 {
		t.Errorf("state left behind: %v", left)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), id) {
		t.Errorf("mounts left for %s", id)
	}
}

// TestInstall: bulkhead install docker edits a daemon.json idempotently
// and uninstall restores it; against the live dockerd the entry it writes
// works after SIGHUP, including as the default runtime.
func TestInstall(t *testing.T) {
	bh := binaries.Bulkhead(t)
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := exec.Command(bh, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("bulkhead %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	t.Run("file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "daemon.json")
		original := "{\n    \"log-level\": \"warn\",\n    \"runtimes\": {\n        \"crun\": {\"path\": \"/usr/bin/crun\"}\n    },\n    \"features\": {\"buildkit\": true}\n}\n"
		if err := os.WriteFile(path, []byte(original), 0o644); err != nil {
			t.Fatal(err)
		}
		out := run(t, "install", "docker", "--config", path, "--force")
		if !strings.Contains(out, "runtimes.bulkhead") || !strings.Contains(out, "kill -HUP") {
			t.Errorf("install output does not say what changed and how to apply it:\n%s", out)
		}
		first, _ := os.ReadFile(path)
		run(t, "install", "docker", "--config", path, "--force")
		second, _ := os.ReadFile(path)
		if string(first) != string(second) {
			t.Errorf("second install changed the file:\n%s\n%s", first, second)
		}
		var doc struct {
			LogLevel string                       `json:"log-level"`
			Runtimes map[string]map[string]string `json:"runtimes"`
			Features map[string]bool              `json:"features"`
		}
		if err := json.Unmarshal(second, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.LogLevel != "warn" || !doc.Features["buildkit"] || doc.Runtimes["crun"]["path"] != "/usr/bin/crun" {
			t.Errorf("unrelated keys changed: %+v", doc)
		}
		if doc.Runtimes["bulkhead"]["path"] != bh {
			t.Errorf("runtimes.bulkhead = %v, want path %s", doc.Runtimes["bulkhead"], bh)
		}
		if n := strings.Count(string(second), `"bulkhead"`); n != 1 {
			t.Errorf("%d bulkhead entries", n)
		}
		if backup, _ := os.ReadFile(path + ".bulkhead-backup"); string(backup) != original {
			t.Errorf("backup is not the original:\n%s", backup)
		}
		run(t, "uninstall", "docker", "--config", path)
		if got, _ := os.ReadFile(path); string(got) != original {
			t.Errorf("uninstall did not restore the file:\n%s", got)
		}
	})

	t.Run("live dockerd", func(t *testing.T) {
		d := daemon(t)
		runtimes := func() string { return d.Must(t, "info", "--format", "{{json .Runtimes}}") }
		run(t, "install", "docker", "--config", d.ConfigFile, "--name", "bh-installed", "--default", "--force")
		if err := d.Reload(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if strings.Contains(runtimes(), `"bh-installed"`) {
				run(t, "uninstall", "docker", "--config", d.ConfigFile, "--name", "bh-installed")
				_ = d.Restart()
			}
		})
		if !strings.Contains(runtimes(), `"bh-installed"`) {
			t.Fatalf("dockerd does not list bh-installed after SIGHUP: %s", runtimes())
		}
		if out := d.Must(t, "run", "--rm", "--runtime=bh-installed", image, "id", "-u"); out != "65534" {
			t.Errorf("--runtime=bh-installed: id -u = %s", out)
		}
		if out := d.Must(t, "run", "--rm", image, "id", "-u"); out != "65534" {
			t.Errorf("default-runtime bh-installed: id -u = %s, want 65534", out)
		}
		out := run(t, "uninstall", "docker", "--config", d.ConfigFile, "--name", "bh-installed")
		// dockerd keeps a reloaded default-runtime whose key is gone (and
		// 20.10 crashes on it): uninstall says to restart instead.
		if !strings.Contains(out, "restart dockerd") {
			t.Errorf("uninstall of a default runtime does not say to restart dockerd:\n%s", out)
		}
		if err := d.Restart(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(runtimes(), `"bh-installed"`) {
			t.Errorf("dockerd still lists bh-installed after uninstall: %s", runtimes())
		}
		if !strings.Contains(runtimes(), `"bulkhead"`) {
			t.Errorf("uninstall took the harness's own entries too: %s", runtimes())
		}
		if out := d.Must(t, "run", "--rm", image, "id", "-u"); out != "0" {
			t.Errorf("default runtime after uninstall: id -u = %s, want 0 (runc)", out)
		}
	})

	t.Run("features", func(t *testing.T) {
		var doc map[string]any
		if err := json.Unmarshal([]byte(run(t, "--root", t.TempDir(), "features")), &doc); err != nil || doc["ociVersionMax"] == nil {
			t.Errorf("bulkhead features is not the backend's features document: %v", err)
		}
	})
}

// gvisorProbe runs the probe under bulkhead-runsc with ws at /workspace,
// checks the sandbox's cgroup from the host while it spins, and returns
// its output (stdout and stderr: a probe that died says why there).
func gvisorProbe(t *testing.T, d *engine.Docker, ws *probeout.Workspace) (id, code, out string, throttled bool, oomKilled func() bool) {
	t.Helper()
	id = d.Must(t, "run", "-d", "--runtime=bulkhead-runsc", "-v", ws.Dir+":/workspace", image, "bulkhead-probe", "-gvisor", "-memory-after-done", "-host-stops-cpu")
	t.Cleanup(func() { d.Run(t, "rm", "-f", id) })
	pid, err := strconv.Atoi(d.Must(t, "inspect", "-f", "{{.State.Pid}}", id))
	if err != nil || pid == 0 {
		t.Fatalf("no pid for the gVisor container: %v\n%s", err, d.Run(t, "logs", id))
	}
	cpu := cgroupDir(t, pid, "cpu")
	mem := cgroupDir(t, pid, "memory")
	if q, err := os.ReadFile(filepath.Join(cpu, "cpu.cfs_quota_us")); err == nil && strings.TrimSpace(string(q)) != "100000" {
		t.Errorf("sandbox cpu.cfs_quota_us = %s, want 100000", q)
	}
	if l, err := os.ReadFile(filepath.Join(mem, "memory.limit_in_bytes")); err == nil && strings.TrimSpace(string(l)) != strconv.Itoa(256<<20) {
		t.Errorf("sandbox memory.limit_in_bytes = %s, want %d", l, 256<<20)
	}
	oomKilled = watchOOMKill(t, pid, mem, 2*time.Minute)
	// The probe spins until told (as bulkhead probe tells it) that the
	// quota bit: on a busy host a spin of fixed length may never reach
	// the quota.
	throttled = engine.Eventually(60*time.Second, func() bool {
		data, err := os.ReadFile(filepath.Join(cpu, "cpu.stat"))
		if err != nil {
			return false
		}
		for _, line := range strings.Split(string(data), "\n") {
			if n, ok := strings.CutPrefix(line, "nr_throttled "); ok {
				v, err := strconv.ParseUint(n, 10, 64)
				return err == nil && v >= protocol.CPUBites
			}
		}
		return false
	})
	if !throttled {
		t.Errorf("cpu: the sandbox's cgroup was never throttled while the probe spun 4 threads")
	}
	d.Run(t, "kill", "-s", "USR1", id)
	code = d.Must(t, "wait", id)
	logs := d.Run(t, "logs", id)
	if logs.Stderr != "" {
		t.Logf("probe stderr:\n%s", logs.Stderr)
	}
	return id, code, logs.Stdout, throttled, oomKilled
}
