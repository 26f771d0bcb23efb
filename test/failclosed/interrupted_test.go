package failclosed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// holdEnv names the directory through which the holding backend and the
// test meet: the backend marks "created" once runc's create returned, and
// returns itself only once the test made "go".
const holdEnv = "BULKHEAD_TEST_HOLD"

// holdVerbEnv names the verb the backend holds after; create when unset.
const holdVerbEnv = "BULKHEAD_TEST_HOLD_VERB"

// hold is a backend that runs runc's create (or the verb holdVerbEnv
// names) as a child, ignoring the signals bulkhead passes on, and then
// holds bulkhead in that verb until the test says go: for a create, the
// moment between the backend's create and bulkhead's verification, made
// as long as a test needs. Every other verb is runc's.
func hold(args []string) int {
	runc, err := exec.LookPath("runc")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hold:", err)
		return 1
	}
	verb := os.Getenv(holdVerbEnv)
	if verb == "" {
		verb = "create"
	}
	if !slices.Contains(args, verb) {
		err = syscall.Exec(runc, append([]string{runc}, args...), os.Environ())
		fmt.Fprintln(os.Stderr, "hold: exec runc:", err)
		return 1
	}
	dir := os.Getenv(holdEnv)
	// The signals bulkhead passes on are ignored, and marked: bulkhead
	// passes one on once its own create has it.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for range signals {
			_ = os.WriteFile(filepath.Join(dir, "signalled"), nil, 0o600)
		}
	}()
	cmd := exec.Command(runc, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	status := 0
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "hold: runc:", err)
		status = 1
	}
	if err := os.WriteFile(filepath.Join(dir, "created"), nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "hold:", err)
		return 1
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
	}
	return status
}

// holdingConfig is a configuration whose runc backend holds after verb
// (hold), and the directory through which the test lets it go.
func holdingConfig(t *testing.T, verb string) (cfg, holdDir string) {
	t.Helper()
	holdDir, dir := t.TempDir(), t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "hold")
	body := fmt.Sprintf("#!/bin/sh\nexport %s=hold %s=%q %s=%s\nexec %q \"$@\"\n", liarEnv, holdEnv, holdDir, holdVerbEnv, verb, self)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[backends.runc]\npath = %q\n", script)), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, holdDir
}

// heldCreate is bulkhead's create of a busybox `sleep` through the
// holding backend, with bulkhead waiting for its backend once runc's
// create has returned.
type heldCreate struct {
	*heldProcess
	root, id, bundle, cfg, holdDir string
	orig                           []byte
}

func startHeldCreate(t *testing.T, createFlags ...string) *heldCreate {
	t.Helper()
	needRunc(t)
	h := &heldCreate{root: t.TempDir()}
	cfg, holdDir := holdingConfig(t, "create")
	h.cfg, h.holdDir = cfg, holdDir
	var err error
	h.bundle = bundle.New(t, []string{"sleep", "300"})
	if h.orig, err = os.ReadFile(filepath.Join(h.bundle, "config.json")); err != nil {
		t.Fatal(err)
	}
	h.id = fmt.Sprintf("held-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	// Whatever the assertions say, leave this host clean (after the held
	// create has ended: cleanups run last first).
	t.Cleanup(func() {
		exec.Command(binaries.Bulkhead(t), "--root", h.root, "--config", h.cfg, "delete", "--force", h.id).Run()
		exec.Command("runc", "--root", filepath.Join(h.root, "runc"), "delete", "--force", h.id).Run()
	})
	args := append([]string{"--root", h.root, "--config", h.cfg, "create", "--bundle", h.bundle}, createFlags...)
	cmd := exec.Command(binaries.Bulkhead(t), append(args, h.id)...)
	cmd.Dir = h.bundle // as runc users run it: a relative flag names a file there
	h.heldProcess = startHeld(t, cmd, "create", filepath.Join(holdDir, "created"), filepath.Join(holdDir, "go"))
	return h
}

// waitSignalled waits until bulkhead has passed a signal on to the held
// backend.
func (h *heldCreate) waitSignalled(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(h.holdDir, "signalled")); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("bulkhead did not pass the signal on to its backend within 90 s:\n%s", h.stderr.String())
		}
	}
}

// TestCreateInterruptedUndoes: SIGTERM reaches bulkhead's create after the
// backend has made the container (the backend ignores it). The create
// must not go on to leave a container: it fails, naming the signal, and
// nothing of the container is left. Before, the create went on and made
// the container, or, with no backend running at that moment, bulkhead
// ended without removing it.
func TestCreateInterruptedUndoes(t *testing.T) {
	// The pid file in the bundle, as Docker's is: assertNothingLeft
	// finds it there if the failed create left it.
	h := startHeldCreate(t, "--pid-file", "init.pid")
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The signal reaches bulkhead's create before the backend goes on:
	// bulkhead passes it on to its backend once its create has it (on a
	// busy machine that can be after a backend let go at once returned).
	h.waitSignalled(t)
	err := h.release(t)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("create finished despite SIGTERM (%v):\n%s", err, h.stderr.String())
	}
	if !strings.Contains(h.stderr.String(), "interrupted by signal") {
		t.Errorf("the create's error does not say it was interrupted:\n%s", h.stderr.String())
	}
	assertNothingLeft(t, h.root, "runc", h.id, h.bundle, h.orig)
}

// TestKilledCreateNeverStarts: SIGKILL ends bulkhead's create between the
// backend's create and verification, leaving a backend container nothing
// checked. start and exec must refuse it, saying what to do, its init
// must stay unstarted, and delete --force must remove everything.
func TestKilledCreateNeverStarts(t *testing.T) {
	h := startHeldCreate(t, "--pid-file", "init.pid")
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h.release(t)
	bulkhead := binaries.Bulkhead(t)
	global := []string{"--root", h.root, "--config", h.cfg}
	verbs := [][]string{{"start", h.id}, {"exec", "--detach", h.id, "true"}}
	for _, verb := range verbs {
		res := binaries.Cmd{}.Run(t, bulkhead, append(global, verb...)...)
		if res.Code == 0 {
			t.Errorf("%s of a container whose create was killed succeeded", verb[0])
		}
		if !strings.Contains(res.Stderr, "its create did not finish") || !strings.Contains(res.Stderr, "delete --force "+h.id) {
			t.Errorf("%s does not say why and what to do:\n%s", verb[0], res.Stderr)
		}
	}
	// Other spellings of the same command line: what the backend reads
	// past bulkhead's parser (a second "--") must not reach its start.
	spellings := [][]string{{"start", "--", "--", h.id}, {"start", h.id, h.id}, {"exec", "--detach", "--", "--", h.id, "true"}, {"start", "--", "-" + h.id}}
	for _, verb := range spellings {
		res := binaries.Cmd{}.Run(t, bulkhead, append(global, verb...)...)
		if res.Code == 0 {
			t.Errorf("bulkhead %s of a container whose create was killed succeeded:\n%s", strings.Join(verb, " "), res.Stderr)
		}
	}
	out, err := exec.Command("runc", "--root", filepath.Join(h.root, "runc"), "state", h.id).Output()
	if err != nil || !strings.Contains(string(out), `"status": "created"`) {
		t.Errorf("runc state of the container: %v %s; want it created, its init never started", err, out)
	}
	del := binaries.Cmd{}.Run(t, bulkhead, append(global, "delete", "--force", h.id)...)
	if del.Code != 0 {
		t.Fatalf("delete --force: exit %d:\n%s", del.Code, del.Stderr)
	}
	assertNothingLeft(t, h.root, "runc", h.id, h.bundle, h.orig)
}

// TestUnrecordedBackendContainerNeverStarts: under bulkhead's root a
// backend container without a record is a create that lost its record
// before verification (killed, and an engine's delete removed the record
// while the backend's create still ran, or undo could not delete it).
// start must refuse it, saying what to do, and leave it unstarted; an id
// the backend does not hold gets the backend's own error.
func TestUnrecordedBackendContainerNeverStarts(t *testing.T) {
	needRunc(t)
	root := t.TempDir()
	id := fmt.Sprintf("unrecorded-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	runcRoot := filepath.Join(root, "runc")
	b := bundle.New(t, []string{"sleep", "300"})
	// stdio /dev/null: the created init keeps what it is given.
	create := exec.Command("runc", "--root", runcRoot, "create", "--bundle", b, id)
	if err := create.Run(); err != nil {
		t.Fatalf("runc create: %v", err)
	}
	t.Cleanup(func() { exec.Command("runc", "--root", runcRoot, "delete", "--force", id).Run() })

	res := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--root", root, "start", id)
	if res.Code == 0 {
		t.Error("start of a backend container bulkhead has no record of succeeded")
	}
	if !strings.Contains(res.Stderr, "no record of it") || !strings.Contains(res.Stderr, "delete --force "+id) {
		t.Errorf("start does not say why and what to do:\n%s", res.Stderr)
	}
	out, err := exec.Command("runc", "--root", runcRoot, "state", id).Output()
	if err != nil || !strings.Contains(string(out), `"status": "created"`) {
		t.Errorf("runc state: %v %s; want it created, its init never started", err, out)
	}

	other := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--root", root, "start", id+"-none")
	if other.Code == 0 || !strings.Contains(other.Stderr, "does not exist") {
		t.Errorf("start of an id nobody holds: exit %d, want runc's own error:\n%s", other.Code, other.Stderr)
	}
}
