package failclosed

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestBackendGetsNoCallerEnvironment: the caller's environment is not the
// backend's. runc acts on LISTEN_FDS and LISTEN_PID (it hands its own
// descriptors, the caller's unjudged ones among them, to the container's
// process) and on NOTIFY_SOCKET (it binds a socket of its own into the
// container and forwards to the caller's); a dynamically linked backend
// reads LD_*. A backend that records its environment, on runc and runsc,
// must see none of them, and runc's container no notify socket; nor may
// it get a descriptor the caller left open without --preserve-fds (runsc
// would keep it in its gofer on the host).
func TestBackendGetsNoCallerEnvironment(t *testing.T) {
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) {
			binaries.NeedRoot(t, backend)
			real, err := exec.LookPath(backend)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			record := filepath.Join(dir, "env")
			wrapper := filepath.Join(dir, backend)
			fds := filepath.Join(dir, "fds")
			script := fmt.Sprintf("#!/bin/sh\n# A %s that records its environment and descriptors.\nenv >> %q\nls -l /proc/$$/fd/ >> %q\nexec %q \"$@\"\n", backend, record, fds, real)
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			config := filepath.Join(dir, "config.toml")
			toml := fmt.Sprintf("[backends.runc]\npath = %q\n", wrapper)
			if backend == "runsc" {
				config = gvisorConfig(t, dir, "config.toml", wrapper)
			} else if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
				t.Fatal(err)
			}
			notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "notify.sock"), Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer notify.Close()
			caller := []string{"LISTEN_FDS=2", "LISTEN_PID=1", "LISTEN_FDNAMES=a:b", "NOTIFY_SOCKET=" + filepath.Join(dir, "notify.sock"),
				"LD_LIBRARY_PATH=/nonexistent", "_LIBCONTAINER_LOGLEVEL=5", "BULKHEAD_TEST_NO_RULE_NAMES=1"}
			b := bundle.New(t, []string{"cat", "/proc/self/mountinfo"})
			id := fmt.Sprintf("backend-env-%s-%d", backend, os.Getpid())
			// A directory the caller left open, not handed on with --preserve-fds.
			open, err := os.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer open.Close()
			r := binaries.Cmd{Env: caller, ExtraFiles: []*os.File{open}}.Run(t, binaries.Bulkhead(t), "--config", config, "--root", filepath.Join(dir, "state"), "run", "--bundle", b, id)
			if r.Code != 0 {
				t.Fatalf("run: exit %d: %s", r.Code, r.Stderr)
			}
			if strings.Contains(r.Stdout, "notify") {
				t.Errorf("the container has the backend's notify socket:\n%s", r.Stdout)
			}
			env, err := os.ReadFile(record)
			if err != nil {
				t.Fatalf("the backend never ran: %v", err)
			}
			if seen, _ := os.ReadFile(fds); strings.Contains(string(seen), open.Name()) {
				t.Errorf("the backend got the caller's descriptor of %s:\n%s", open.Name(), seen)
			}
			for _, kv := range caller {
				if k, _, _ := strings.Cut(kv, "="); strings.Contains(string(env), "\n"+k+"=") || strings.HasPrefix(string(env), k+"=") {
					t.Errorf("the backend got the caller's %s", k)
				}
			}
		})
	}
}

// TestCallerRlimitsNotInherited: a limit the spec does not set is the
// caller's, which the backend passes on. A caller allowed realtime
// priority and a negative nice must not hand them to the job: the
// container's process has RLIMIT_RTPRIO and RLIMIT_NICE 0, on runc and
// runsc. Raising the limits needs CAP_SYS_RESOURCE (the cgroup v2 guest
// has it).
func TestCallerRlimitsNotInherited(t *testing.T) {
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) {
			binaries.NeedRoot(t, backend)
			// The test's own limits, which bulkhead and its backend inherit
			// as from any caller.
			var rtprio, nice unix.Rlimit
			if err := unix.Getrlimit(unix.RLIMIT_RTPRIO, &rtprio); err != nil {
				t.Fatal(err)
			}
			if err := unix.Getrlimit(unix.RLIMIT_NICE, &nice); err != nil {
				t.Fatal(err)
			}
			if err := unix.Setrlimit(unix.RLIMIT_RTPRIO, &unix.Rlimit{Cur: 50, Max: 50}); err != nil {
				t.Skipf("raising a hard limit needs CAP_SYS_RESOURCE, which this host's root lacks: %v", err)
			}
			t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_RTPRIO, &rtprio) })
			if err := unix.Setrlimit(unix.RLIMIT_NICE, &unix.Rlimit{Cur: 40, Max: 40}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_NICE, &nice) })
			dir := t.TempDir()
			// ulimit, not /proc/self/limits, which gVisor does not have.
			b := bundle.New(t, []string{"sh", "-c", "echo rtprio $(ulimit -Sr) $(ulimit -Hr); echo nice $(ulimit -Se) $(ulimit -He)"})
			id := fmt.Sprintf("caller-rlimits-%s-%d", backend, os.Getpid())
			r := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--root", filepath.Join(dir, "state"), "--backend", backend, "run", "--bundle", b, id)
			if r.Code != 0 {
				t.Fatalf("run: exit %d: %s", r.Code, r.Stderr)
			}
			for _, want := range []string{"rtprio 0 0", "nice 0 0"} {
				if !strings.Contains(r.Stdout, want+"\n") {
					t.Errorf("the container's limits:\n%s\nwant %q", r.Stdout, want)
				}
			}
		})
	}
}

// POSIX message queues are charged to the host uid, which every container
// of the default profile shares: with the caller's 819200 bytes one job's
// queues left every other container on the host unable to open one. The
// container's process has RLIMIT_MSGQUEUE 0, on runc and runsc.
func TestNoMessageQueues(t *testing.T) {
	for _, backend := range []string{"runc", "runsc"} {
		t.Run(backend, func(t *testing.T) {
			binaries.NeedRoot(t, backend)
			dir := t.TempDir()
			b := bundle.New(t, []string{"sh", "-c", "echo msgqueue $(ulimit -Sq) $(ulimit -Hq)"})
			id := fmt.Sprintf("no-mqueue-%s-%d", backend, os.Getpid())
			r := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--root", filepath.Join(dir, "state"), "--backend", backend, "run", "--bundle", b, id)
			if r.Code != 0 {
				t.Fatalf("run: exit %d: %s", r.Code, r.Stderr)
			}
			if !strings.Contains(r.Stdout, "msgqueue 0 0\n") {
				t.Errorf("the container's limits:\n%s\nwant msgqueue 0 0", r.Stdout)
			}
		})
	}
}
