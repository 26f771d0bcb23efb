package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/runtime/backend"
)

func TestStartsByFifo(t *testing.T) {
	runc := &backend.Backend{Name: "runc", Path: "/usr/sbin/runc"}
	hook := rspec.Hook{Path: "/usr/bin/true"}
	for _, tc := range []struct {
		name string
		b    *backend.Backend
		spec *rspec.Spec
		want bool
	}{
		{"runc, no hooks", runc, &rspec.Spec{}, true},
		{"runc, a prestart hook only", runc, &rspec.Spec{Hooks: &rspec.Hooks{CreateRuntime: []rspec.Hook{hook}}}, true},
		{"runc, a poststart hook", runc, &rspec.Spec{Hooks: &rspec.Hooks{Poststart: []rspec.Hook{hook}}}, false},
		{"runc under another name", &backend.Backend{Name: "runc-next", Path: "/opt/runc"}, &rspec.Spec{}, true},
		{"crun", &backend.Backend{Name: "crun", Path: "/usr/bin/crun"}, &rspec.Spec{}, false},
		{"runsc", &backend.Backend{Name: "runsc", Path: "/usr/bin/runsc"}, &rspec.Spec{}, false},
	} {
		if got := startsByFifo(tc.b, tc.spec); got != tc.want {
			t.Errorf("%s: startsByFifo = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The start that read the init's byte released it, even when a second
// start, seeing the program already run, removed the fifo first.
func TestReadExecFifoFifoRemovedByAnother(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), execFifo)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		_, _ = w.Write([]byte{0})
		_ = w.Close()
	}()
	f, err := os.OpenFile(fifo, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := readExecFifo(f, nil); err != nil {
		t.Fatalf("the start that read the byte: %v, want it started", err)
	}
}

// Nothing read: another start released the init first.
func TestReadExecFifoNothingRead(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), execFifo)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			_ = w.Close()
		}
	}()
	f, err := os.OpenFile(fifo, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = readExecFifo(f, nil)
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("nothing read: %v, want already running", err)
	}
}
