package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A job that swaps a directory of its own with links into /proc and /sys
// while execs are made there lands no exec in those trees on runc: the
// cwd rule resolves the path, the job swaps the link, and the directory
// runc is handed is judged where it lies, not where the path once led.
// runsc resolves an exec's cwd in gVisor's own tree, whose /proc holds no
// host descriptor.
func TestExecCwdSwappedIntoRuntimeTrees(t *testing.T) {
	needRoot(t, "runc")
	g := []string{"--root", stateRoot(t), "--backend", "runc"}
	swap := "cd /tmp && mkdir D && while :; do mv D v; mv v D; ln -s /proc/1 P; mv P v; rm v; ln -s /sys/fs/cgroup P; mv P v; rm v; done"
	id := uniqueID("cwd-race")
	must(t, append(g, "run", "--detach", "--bundle", bundle.New(t, []string{"sh", "-c", swap}), id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	execsWhileSwapped(t, g, id, "/tmp/v")
}

// execsWhileSwapped makes execs with cwd in container id while a link on
// its way is swapped, until three were refused for a directory the path
// led into /proc or /sys once the rule had resolved it, and fails if one
// ran there, or if in three minutes none was refused: then the race was
// never run and the test proves nothing.
func execsWhileSwapped(t *testing.T, g []string, id, cwd string) {
	t.Helper()
	refused, start := 0, time.Now()
	for i, end := 0, start.Add(3*time.Minute); refused < 3 && time.Now().Before(end); i++ {
		r := bulkhead(t, "", append(g, "exec", "--cwd", cwd, id, "sh", "-c", "pwd -P")...)
		ran := strings.TrimSpace(r.stdout)
		if r.code == 0 && (strings.HasPrefix(ran, "/proc") || strings.HasPrefix(ran, "/sys") || strings.HasPrefix(ran, "/dev")) {
			t.Fatalf("exec %d --cwd %s ran in %s", i, cwd, ran)
		}
		if r.code != 0 && (strings.Contains(r.stderr, "under /proc when opened") || strings.Contains(r.stderr, "under /sys when opened")) {
			refused++
		}
	}
	t.Logf("%d execs refused for a directory under /proc or /sys in %s", refused, time.Since(start).Round(time.Second))
	if refused == 0 {
		t.Errorf("in 3 minutes of execs with cwd %s none led into /proc or /sys once the rule had resolved it: the race was not run", cwd)
	}
}

// A read-only bind is read-only only through itself: another writer of
// its host directory (here the host, as a checkout's owner or another
// container's workspace would be) swaps a directory of it with a link
// into /proc while execs are made below it. No exec lands in /proc.
func TestExecCwdSwappedInAReadOnlyBind(t *testing.T) {
	needRoot(t, "runc")
	g := []string{"--root", stateRoot(t), "--backend", "runc"}
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.MkdirAll(filepath.Join(shared, "d", "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	chmod(t, shared, 0o777)
	b := bundle.New(t, []string{"sleep", "600"}, func(s *rspec.Spec) {
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: shared, Options: []string{"rbind", "ro"}})
	})
	id := uniqueID("cwd-ro-bind")
	must(t, append(g, "run", "--detach", "--bundle", b, id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	if err := os.Symlink("/proc/1", filepath.Join(shared, "l")); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, mv := range [][2]string{{"d", "v"}, {"v", "d"}, {"l", "v"}, {"v", "l"}} {
				_ = os.Rename(filepath.Join(shared, mv[0]), filepath.Join(shared, mv[1]))
			}
		}
	}()
	defer func() { close(stop); <-swapped }()
	execsWhileSwapped(t, g, id, "/data/v/net")
}
