package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer/specconv"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/jobimage"
)

const jobPath = jobimage.Path

// jobTimeout bounds one job; the profiles' own max_lifetime is longer
// than any job here takes even on runsc's ptrace platform.
const jobTimeout = 25 * time.Minute

var (
	rootfsOnce sync.Once
	rootfsDir  string
	rootfsErr  error
	workDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if workDir != "" {
		os.RemoveAll(workDir)
	}
	os.Exit(code)
}

// sharedRootfs returns the image all jobs run in, built once.
func sharedRootfs(t *testing.T) string {
	t.Helper()
	rootfsOnce.Do(func() {
		if workDir, rootfsErr = os.MkdirTemp("", "bulkhead-jobs-"); rootfsErr != nil {
			return
		}
		rootfsDir = filepath.Join(workDir, "rootfs")
		rootfsErr = jobimage.Rootfs(rootfsDir)
	})
	if rootfsErr != nil {
		t.Fatalf("job image: %v", rootfsErr)
	}
	return rootfsDir
}

// needTools skips when a toolchain is truly absent, naming it.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, p := range tools {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is not installed (hack/install-deps.sh installs the job toolchains): %v", p, err)
		}
	}
}

// checkout copies a project to a fresh host folder below /tmp (one of
// bind_roots), optionally breaks one of its tests, and gives it to uid.
func checkout(t *testing.T, src string, uid int, edit *[3]string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "checkout")
	if err := jobimage.Checkout(src, dst, uid, edit); err != nil {
		t.Fatal(err)
	}
	return dst
}

// box is one bulkhead --root and config for a test, with the backend the
// jobs ask for.
type box struct {
	root, cfg, audit, backend string
	// annotated holds the bundles that select their profile and backend
	// by annotation.
	annotated map[string]bool
}

func newBox(t *testing.T, backend string) *box {
	t.Helper()
	binaries.NeedRoot(t, backend)
	dir := t.TempDir()
	b := &box{root: filepath.Join(dir, "root"), cfg: filepath.Join(dir, "config.toml"),
		audit: filepath.Join(dir, "audit.jsonl"), backend: backend, annotated: map[string]bool{}}
	body := fmt.Sprintf("audit_log = %q\nchanges_dir = %q\n", b.audit, filepath.Join(dir, "changes"))
	if err := os.WriteFile(b.cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

// jobBundle writes a bundle as an engine would: the caller's spec (root,
// `runc spec`'s defaults) running args in /workspace/cwd, the checkout
// bound read-write at /workspace, and the profile asked for by
// annotation. The image is bound into the bundle, where root.path must
// lie.
func (b *box) jobBundle(t *testing.T, profile, ws, cwd string, args, env []string) string {
	t.Helper()
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(sharedRootfs(t), rootfs, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind the job image: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(rootfs, unix.MNT_DETACH) })
	s := specconv.Example()
	s.Process.Terminal = false
	s.Process.Args = args
	s.Process.Cwd = filepath.Join("/workspace", cwd)
	s.Process.Env = append([]string{jobPath}, env...)
	s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: ws, Options: []string{"rbind", "rw"}})
	s.Annotations = map[string]string{}
	if profile != "" {
		s.Annotations["bulkhead.dev/profile"] = profile
		b.annotated[dir] = true
	}
	if b.backend == "runsc" && profile != "" {
		s.Annotations["bulkhead.dev/backend"] = "runsc"
	}
	if err := bundle.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	return dir
}

// outcome is what a job printed and how it ended.
type outcome struct {
	code   int
	output string
	wall   time.Duration
}

func (o outcome) String() string {
	return fmt.Sprintf("exit %d after %v; output:\n%s", o.code, o.wall.Round(time.Millisecond), o.output)
}

// command runs argv with stdout and stderr into one Capture (a pipe,
// since runc gives a stdio file to the container's uid) and returns its
// outcome.
func command(t *testing.T, dir string, env []string, argv ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	out, err := binaries.NewCapture()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out.W, out.W
	start := time.Now()
	err = cmd.Run()
	o := outcome{wall: time.Since(start)}
	o.output = out.Collect()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", argv, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%v: no result within %v", argv, jobTimeout)
	}
	return o
}

// run is `bulkhead run` of a bundle: create, verify, start, wait, delete.
// The default profile is not selectable: its backend comes from the
// runtime entry (--backend), as bulkhead-runsc's does.
func (b *box) run(t *testing.T, bundleDir, id string) outcome {
	t.Helper()
	argv := []string{binaries.Bulkhead(t), "--root", b.root, "--config", b.cfg}
	if !b.annotated[bundleDir] {
		argv = append(argv, "--backend", b.backend)
	}
	argv = append(argv, "run", "--bundle", bundleDir, id)
	return command(t, "", os.Environ(), argv...)
}

// bulkhead runs another bulkhead verb and fails the test on a non-zero exit.
func (b *box) bulkhead(t *testing.T, args ...string) string {
	t.Helper()
	o := command(t, "", os.Environ(), append([]string{binaries.Bulkhead(t), "--root", b.root, "--config", b.cfg}, args...)...)
	if o.code != 0 {
		t.Fatalf("bulkhead %v: %v", args, o)
	}
	return o.output
}

// profileOf reads which profile and backend the audit log says the
// container ran under: the annotation must have selected the job profile.
func (b *box) profileOf(t *testing.T, id string) (profile, backend string) {
	t.Helper()
	data, err := os.ReadFile(b.audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		var e struct{ Event, ID, Profile, Backend string }
		if json.Unmarshal([]byte(line), &e) == nil && e.ID == id && (e.Event == "run" || e.Event == "create") {
			return e.Profile, e.Backend
		}
	}
	t.Fatalf("no audit line for %s", id)
	return "", ""
}

var idSeq int

func jobID(name string) string {
	idSeq++
	return fmt.Sprintf("job-%s-%d-%d", name, os.Getpid(), idSeq)
}
