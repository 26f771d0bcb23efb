package containerd2

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/ctrtest"
	"bulkhead.dev/bulkhead/test/engine"
)

// TestEngineFilesOfAnotherEngine: Docker's and CRI's files for a
// container (its secrets, its volumes) are bound into that container by
// the engine that made it. A client of another containerd named its own
// task with that container's id, in dockerd's namespace moby or CRI's
// k8s.io, bound the files, and the job read them: the id alone was taken
// for the owner. Both are refused now, and leave nothing.
func TestEngineFilesOfAnotherEngine(t *testing.T) {
	d := containerd2(t)
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		t.Fatal(err)
	}
	victim := hex.EncodeToString(buf)
	dir := t.TempDir()
	// A Docker data root with dockerd's own containerd, laid out as
	// dockerd lays it out, holding the victim's secret.
	docker := filepath.Join(dir, "docker")
	secrets := filepath.Join(docker, "containers", victim, "mounts", "secrets")
	// Another containerd's root, with its CRI plugin's volume of the victim.
	other := filepath.Join(dir, "containerd")
	volume := filepath.Join(other, "io.containerd.grpc.v1.cri", "containers", victim, "volumes", "v")
	for _, p := range []string{secrets, filepath.Join(docker, "image"), filepath.Join(docker, "network"), filepath.Join(docker, "volumes"),
		filepath.Join(docker, "containerd", "daemon"), volume, filepath.Join(other, "io.containerd.metadata.v1.bolt")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{secrets, volume} {
		if err := os.WriteFile(filepath.Join(p, "token"), []byte("victim's token\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct{ name, ns, source string }{
		{"docker", "moby", secrets},
		{"cri", ctrtest.CRINamespace, volume},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := &ctrtest.Daemon{Containerd: d.Containerd, Ctr: d.Ctr, NS: c.ns}
			if err := in.ImportProbeImage(t); err != nil {
				t.Fatal(err)
			}
			r := in.Run(2*time.Minute, "run", "--rm", "--runtime", ctrtest.ShimRuntime,
				"--mount", "type=bind,src="+c.source+",dst=/mnt,options=rbind:ro", ctrtest.Image, victim, "cat", "/mnt/token")
			t.Cleanup(func() { in.Run(time.Minute, "container", "rm", victim) })
			if r.Code == 0 || strings.Contains(r.Stdout, "victim's token") {
				t.Fatalf("a task of another containerd named as %s's container, binding its file: %s", c.name, r)
			}
			if !strings.Contains(r.Stderr, "is the engine's file for container "+victim+", not for this container") {
				t.Errorf("refused for another reason: %s", r)
			}
			if left := in.Leftovers(t, victim); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestOtherContainerdsStateRefused: runc's shim keeps every containerd's
// tasks below /run/containerd/runc, or below the Root of a client's runc
// options: a client of another containerd, naming this one's namespace
// (or its Root), reached its containers there, deleted one by creating
// its id, and joined its pods. bulkhead's shim keeps each containerd's
// tasks in its own state directory and refuses another Root.
func TestOtherContainerdsStateRefused(t *testing.T) {
	d := containerd2(t)
	ctx, client, img := d.Client(t, 2*time.Minute)
	id := ctrtest.NewID("other-root")
	// A plain runc container of the host's containerd's layout under that
	// id: containerd's clean-up of the refused task deleted it with plain
	// runc in /run/containerd/runc/<namespace>, where runc's shim looks
	// when the bundle names no root of its own.
	hostRoot := filepath.Join("/run/containerd/runc", ctrtest.Namespace)
	victim := bundle.New(t, []string{"sleep", "3600"})
	// No pipes: the detached container would hold them open.
	if err := exec.Command("runc", "--root", hostRoot, "run", "--detach", "--bundle", victim, id).Run(); err != nil {
		t.Fatalf("runc run: %v", err)
	}
	t.Cleanup(func() { _ = exec.Command("runc", "--root", hostRoot, "delete", "--force", id).Run() })
	ctr, err := client.NewContainer(ctx, id, containerd.WithRuntime(ctrtest.ShimRuntime, &options.Options{Root: "/run/containerd/runc"}),
		containerd.WithNewSnapshot(id, img), containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("true")))
	if err != nil {
		t.Fatal(err)
	}
	defer ctr.Delete(context.WithoutCancel(ctx), containerd.WithSnapshotCleanup)
	task, err := ctr.NewTask(ctx, cio.NullIO)
	if err == nil {
		_, _ = task.Delete(ctx, containerd.WithProcessKill)
		t.Fatal("a task with the host's containerd's runc root was created")
	}
	if !strings.Contains(err.Error(), `runc option Root "/run/containerd/runc" is refused`) {
		t.Errorf("refused for another reason: %v", err)
	}
	if _, err := os.Stat(filepath.Join(hostRoot, "bulkhead", id)); !os.IsNotExist(err) {
		t.Errorf("a record of %s in the host's containerd's root: %v", id, err)
	}
	// containerd's clean-up of the dead task (the shim binary's delete)
	// ends with the task's bundle removed.
	taskDir := filepath.Join(d.Dir, "state", "io.containerd.runtime.v2.task", ctrtest.Namespace, id)
	if !engine.Eventually(time.Minute, func() bool { _, err := os.Stat(taskDir); return os.IsNotExist(err) }) {
		t.Fatalf("the refused task's bundle %s is still there a minute later", taskDir)
	}
	if out, err := exec.Command("runc", "--root", hostRoot, "state", id).CombinedOutput(); err != nil || !strings.Contains(string(out), `"running"`) {
		t.Errorf("the host's containerd's container %s after the refused task: %v\n%s", id, err, out)
	}
}

// TestClientStdioAndMountsRefused: runc's task service runs a binary://
// stream's program as root on the host, appends to a file:// stream's
// path, opens any path as the job's stdin or stdout when the process
// starts (a FIFO in a directory a job can write, or reached through its
// root in /proc, becomes a link to a host file by then), and mounts a
// client's rootfs mounts before any rule runs: with containerd's loop
// option, one on another or at a target inside the rootfs (propagating
// where a host directory's mount is shared), an overlay whose work
// directory the kernel empties. bulkhead's shim refuses each before the
// task service sees it, and the host is as it was.
func TestClientStdioAndMountsRefused(t *testing.T) {
	ctx, client, img := containerd2(t).Client(t, 2*time.Minute)
	dir := t.TempDir()
	proof, secret := filepath.Join(dir, "proof"), filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root's only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	image := filepath.Join(dir, "disk.ext4")
	if out, err := exec.Command("mkfs.ext4", "-q", image, "8M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	swappable := filepath.Join(jobs, "c-stdin")
	if err := unix.Mkfifo(swappable, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(jobs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	// A host directory, and one whose work/ holds a service's data.
	hostDir := filepath.Join(dir, "host")
	hostBind := mount.Mount{Type: "bind", Source: hostDir, Options: []string{"rbind", "ro"}}
	precious := filepath.Join(dir, "victim", "work", "data")
	for _, d := range []string{hostDir, filepath.Join(dir, "up"), filepath.Dir(precious)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(precious, []byte("a service's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log")
	if err := unix.Mkfifo(log, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		io     cio.Creator
		mounts []mount.Mount
		want   string
	}{
		{"binary", cio.BinaryIO("/bin/sh", map[string]string{"-c": "touch " + proof}), nil, "is refused: a stream URI"},
		{"file", cio.LogFile(proof), nil, "is refused: a stream URI"},
		{"path", rawIO(secret), nil, "is not a FIFO"},
		{"job-writable", rawIO(swappable), nil, "is owned by uid 65534"},
		{"proc", rawIO("/proc/self/root" + swappable), nil, "is on procfs"},
		{"service-fifo", rawIO(log), nil, "is not named as a client names a stream"},
		{"loop", cio.NullIO, []mount.Mount{{Type: "ext4", Source: image, Options: []string{"loop"}}}, "rootfs mount of type \"ext4\""},
		{"two-mounts", cio.NullIO, []mount.Mount{hostBind, hostBind}, "a rootfs of 2 mounts is refused"},
		{"target", cio.NullIO, []mount.Mount{{Type: "bind", Source: hostDir, Target: "tools", Options: []string{"rbind", "ro"}}}, "rootfs mount target \"tools\""},
		{"overlay-workdir", cio.NullIO, []mount.Mount{{Type: "overlay", Source: "overlay",
			Options: []string{"lowerdir=" + hostDir, "upperdir=" + filepath.Join(dir, "up"), "workdir=" + filepath.Join(dir, "victim")}}}, "rootfs overlay is refused before it is mounted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := ctrtest.NewID("client-" + c.name)
			// A task's own rootfs mounts are its only ones where the
			// container has no snapshot (its spec then names a root).
			opts, specOpts := []containerd.NewContainerOpts{containerd.WithRuntime(ctrtest.ShimRuntime, nil)}, []oci.SpecOpts{}
			if c.mounts == nil {
				opts = append(opts, containerd.WithNewSnapshot(id, img))
			} else {
				specOpts = append(specOpts, oci.WithRootFSPath(hostDir))
			}
			specOpts = append(specOpts, oci.WithImageConfig(img), oci.WithProcessArgs("cat", "/etc/hostname"))
			ctr, err := client.NewContainer(ctx, id, append(opts, containerd.WithNewSpec(specOpts...))...)
			if err != nil {
				t.Fatal(err)
			}
			defer ctr.Delete(context.WithoutCancel(ctx), containerd.WithSnapshotCleanup)
			var taskOpts []containerd.NewTaskOpts
			if c.mounts != nil {
				taskOpts = append(taskOpts, containerd.WithRootFS(c.mounts))
			}
			task, err := ctr.NewTask(ctx, c.io, taskOpts...)
			if err == nil {
				_, _ = task.Delete(ctx, containerd.WithProcessKill)
				t.Fatalf("a task with %s was created", c.name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("refused for another reason: %v\nwant %q", err, c.want)
			}
			if _, err := os.Stat(proof); !os.IsNotExist(err) {
				t.Errorf("%s: the host command or file ran or was made: %v", proof, err)
			}
			if _, err := os.Stat(precious); err != nil {
				t.Errorf("the host's %s after the refused task: %v", precious, err)
			}
			if out, _ := exec.Command("losetup", "-j", image).Output(); len(out) > 0 {
				t.Errorf("a loop device of %s: %s", image, out)
			}
		})
	}
}

// rawIO gives a task the path stdin as its stdin, as a client that names
// its streams itself does.
func rawIO(stdin string) cio.Creator {
	return func(string) (cio.IO, error) { return rawStreams{stdin}, nil }
}

type rawStreams struct{ stdin string }

func (r rawStreams) Config() cio.Config { return cio.Config{Stdin: r.stdin} }
func (rawStreams) Cancel()              {}
func (rawStreams) Wait()                {}
func (rawStreams) Close() error         { return nil }
