package failclosed

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestBackendGetsNoCallerEnvironment: the caller's environment is not the
// backend's. runc acts on LISTEN_FDS and LISTEN_PID (it hands its own
// descriptors, the caller's unjudged ones among them, to the container's
// process) and on NOTIFY_SOCKET (it binds a socket of its own into the
// container and forwards to the caller's); a dynamically linked backend
// reads LD_*. A backend that records its environment, on runc and runsc,
// must see none of them, and runc's container no notify socket.
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
			script := fmt.Sprintf("#!/bin/sh\n# A %s that records its environment.\nenv >> %q\nexec %q \"$@\"\n", backend, record, real)
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
			r := binaries.Cmd{Env: caller}.Run(t, binaries.Bulkhead(t), "--config", config, "--root", filepath.Join(dir, "state"), "run", "--bundle", b, id)
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
			for _, kv := range caller {
				if k, _, _ := strings.Cut(kv, "="); strings.Contains(string(env), "\n"+k+"=") || strings.HasPrefix(string(env), k+"=") {
					t.Errorf("the backend got the caller's %s", k)
				}
			}
		})
	}
}
