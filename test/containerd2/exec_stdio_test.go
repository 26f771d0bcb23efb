package containerd2

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/ctrtest"
)

// TestExecStdioOpenedAsJudged: runc's task service opens an exec's stdio
// at the exec's Start, which a client sends when it likes; by then the
// path it gave at Exec may lead to a host file (a client remade its other
// container from an image with a link where the FIFO was). bulkhead's shim
// hands the task service the FIFO it judged, and the job reads what the
// client wrote to it, never the file now at the path.
func TestExecStdioOpenedAsJudged(t *testing.T) {
	ctx, client, img := containerd2(t).Client(t, 2*time.Minute)
	dir := t.TempDir()
	secret := dir + "/root-only"
	if err := os.WriteFile(secret, []byte("ROOT-ONLY-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := ctrtest.NewID("exec-stdio")
	task, pspec := sleepingTask(ctx, t, client, img, id)
	pspec.Args = []string{"head", "-n", "1"}
	var out syncBuffer
	streams := cio.NewCreator(cio.WithStreams(strings.NewReader("what the client wrote\n"), &out, &out), cio.WithFIFODir(dir))
	var stdin string
	proc, err := task.Exec(ctx, "head", &pspec, func(id string) (cio.IO, error) {
		i, err := streams(id)
		if err == nil {
			stdin = i.Config().Stdin
		}
		return i, err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill)
	// The client reads back the streams it gave (CRI attaches to them
	// again after containerd restarts).
	got, err := client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: id, ExecID: "head"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Process.Stdin != stdin {
		t.Errorf("the exec's stdin reads back as %q, want the client's %q", got.Process.Stdin, stdin)
	}
	// Between Exec and Start the path comes to lead to a host file.
	if err := os.Rename(stdin, stdin+".judged"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, stdin); err != nil {
		t.Fatal(err)
	}
	exited, err := proc.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("the exec did not end")
	}
	proc.IO().Wait()
	if got := out.String(); strings.Contains(got, "ROOT-ONLY-SECRET") || !strings.Contains(got, "what the client wrote") {
		t.Errorf("the exec's job read %q, want what the client wrote to the judged FIFO", got)
	}
}

// sleepingTask is a running task of bulkhead's shim whose init sleeps a
// minute, and its process spec, to exec by; both go with the test.
func sleepingTask(ctx context.Context, t *testing.T, client *containerd.Client, img containerd.Image, id string) (containerd.Task, specs.Process) {
	t.Helper()
	ctr, err := client.NewContainer(ctx, id, containerd.WithRuntime(ctrtest.ShimRuntime, nil),
		containerd.WithNewSnapshot(id, img), containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "60")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctr.Delete(context.WithoutCancel(ctx), containerd.WithSnapshotCleanup) })
	task, err := ctr.NewTask(ctx, cio.NullIO)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { task.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill) })
	if err := task.Start(ctx); err != nil {
		t.Fatal(err)
	}
	spec, err := ctr.Spec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return task, *spec.Process
}

// syncBuffer is a buffer the stdout and stderr copiers write at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestExecStartedOnce: an exec whose Start failed (here: into a paused
// container, which bulkhead refuses) is not started again. runc's task
// service leaves it created; a second Start reopened its streams and,
// failing again, closed a closed channel, which ended the shim and every
// container it served.
func TestExecStartedOnce(t *testing.T) {
	ctx, client, img := containerd2(t).Client(t, 2*time.Minute)
	task, pspec := sleepingTask(ctx, t, client, img, ctrtest.NewID("exec-once"))
	pspec.Args = []string{"true"}
	var out syncBuffer
	proc, err := task.Exec(ctx, "true", &pspec, cio.NewCreator(cio.WithStreams(nil, &out, &out), cio.WithFIFODir(t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill)
	if err := task.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(ctx); err == nil {
		t.Fatal("an exec into a paused container started")
	}
	if err := task.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(ctx); err == nil || !strings.Contains(err.Error(), "is not started again") {
		t.Errorf("a second start of the exec whose first failed: %v, want it refused", err)
	}
	if st, err := task.Status(ctx); err != nil || st.Status != containerd.Running {
		t.Errorf("the task after the exec's second start: %v %v, want it running (the shim serving)", st.Status, err)
	}
}
