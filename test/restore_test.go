package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A checkpoint image restores every process of the container with the
// identity, capabilities and seccomp filter it had: a gVisor image inside
// a sandbox the host cannot see into, and a CRIU image on runc beside an
// init that passes create's verification (a root process with every
// capability and no filter escaped the host's root filesystem through
// open_by_handle_at). An enforced profile refuses restore on both,
// whatever the image holds, and leaves nothing behind.
func TestRestoreRefused(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		id := uniqueID("restore-" + backend)
		r := bulkhead(t, "", append(g, "restore", "--image-path", t.TempDir(), "--bundle", bundle.New(t, []string{"true"}), id)...)
		if r.code == 0 {
			bulkhead(t, "", append(g, "delete", "--force", id)...)
			t.Fatalf("restore on %s under the default profile was handed over", backend)
		}
		if !strings.Contains(r.stderr, "restore on "+backend) {
			t.Fatalf("refused, but not for restoring on %s:\n%s", backend, r.stderr)
		}
		assertGone(t, root, backend, id)
	})
}

// runc runs the --criu program as root, outside any container: a program
// that anyone but root could have written is refused before runc runs
// it, and one of root's alone is run by its real path.
func TestCriuMustBeRoots(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runc"}
	id := uniqueID("criu")
	must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "60"}), id)...)
	defer bulkhead(t, "", append(g, "delete", "--force", id)...)
	must(t, append(g, "start", id)...)

	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(open, "criu")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := bulkhead(t, "", append([]string{"--criu", fake}, append(g, "checkpoint", "--image-path", t.TempDir(), id)...)...)
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("a --criu program in a directory anyone may write was run as root (exit %d):\n%s", r.code, r.stderr)
	}
	if r.code == 0 || !strings.Contains(r.stderr, "can be changed by") {
		t.Fatalf("--criu in a directory anyone may write: exit %d, want it refused:\n%s", r.code, r.stderr)
	}
	// restore runs criu too, where a profile in audit mode hands it over.
	audit := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(audit, []byte("[profiles.default]\nmode = \"audit\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	restored := uniqueID("criu-restore")
	r = bulkhead(t, "", append([]string{"--criu", fake, "--config", audit}, append(g, "restore", "--image-path", t.TempDir(),
		"--bundle", bundle.New(t, []string{"true"}), restored)...)...)
	bulkhead(t, "", append([]string{"--config", audit}, append(g, "delete", "--force", restored)...)...)
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("restore ran a --criu program in a directory anyone may write as root (exit %d):\n%s", r.code, r.stderr)
	}
	if r.code == 0 || !strings.Contains(r.stderr, "can be changed by") {
		t.Fatalf("restore with --criu in a directory anyone may write: exit %d, want it refused:\n%s", r.code, r.stderr)
	}

	// Root's alone, named through a link in that directory: runc runs
	// the program the link named when it was judged.
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fake, link); err != nil {
		t.Fatal(err)
	}
	r = bulkhead(t, "", append([]string{"--criu", link}, append(g, "checkpoint", "--image-path", t.TempDir(), id)...)...)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("a --criu program of root's alone was not run (exit %d): %v\n%s", r.code, err, r.stderr)
	}
}

// runsc leaves a checkpointed container running by restoring a new
// sandbox from the image it just wrote: a restore by another name, which
// no verification of bulkhead's would see. An enforced profile refuses
// it, and the container runs on as it was; runc's --leave-running keeps
// the process it checkpointed, and is the backend's.
func TestCheckpointLeaveRunningRefusedOnRunsc(t *testing.T) {
	needRoot(t, "runsc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runsc"}
	id := uniqueID("leave-running")
	must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "60"}), id)...)
	defer bulkhead(t, "", append(g, "delete", "--force", id)...)
	must(t, append(g, "start", id)...)
	images := t.TempDir()
	r := bulkhead(t, "", append(g, "checkpoint", "--leave-running", "--image-path", images, id)...)
	if r.code == 0 || !strings.Contains(r.stderr, "--leave-running: runsc leaves a checkpointed container running by restoring") {
		t.Fatalf("checkpoint --leave-running on runsc: exit %d, want it refused naming the flag:\n%s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(images); len(entries) > 0 {
		t.Errorf("the refused checkpoint wrote %d entries to its image path", len(entries))
	}
	if st := must(t, append(g, "state", id)...); !strings.Contains(st, `"running"`) {
		t.Errorf("after the refused checkpoint the container is not running:\n%s", st)
	}
}

// A checkpoint image holds the job's memory, whatever secrets it had:
// runsc wrote it 0644 under the caller's umask. Only root may read what
// bulkhead's checkpoint writes.
func TestCheckpointImageOnlyRoots(t *testing.T) {
	needRoot(t, "runsc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runsc"}
	id := uniqueID("checkpoint-image")
	must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "60"}), id)...)
	defer bulkhead(t, "", append(g, "delete", "--force", id)...)
	must(t, append(g, "start", id)...)
	images := t.TempDir()
	if err := os.Chmod(images, 0o755); err != nil {
		t.Fatal(err)
	}
	must(t, append(g, "checkpoint", "--image-path", images, id)...)
	entries, err := os.ReadDir(images)
	if err != nil || len(entries) == 0 {
		t.Fatalf("checkpoint wrote no image: %v", err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v: others may read the job's memory", e.Name(), fi.Mode().Perm())
		}
	}
}
