package containerd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"

	"bulkhead.dev/bulkhead/test/ctrtest"
)

// TestShimCgroupRefused: runc's shim manager moves the shim it starts into
// the cgroup a container's runc option ShimCgroup names, the client's word:
// another tenant's container cgroup, whose pids limit the root shim then
// shared (containerd 1.6 hands the shim the options when it starts it;
// 2.x does not). bulkhead's shim refuses the option, and the cgroup holds
// no process of it.
func TestShimCgroupRefused(t *testing.T) {
	d := containerd16(t)
	ctx, client, img := d.Client(t, 2*time.Minute)
	name := ctrtest.NewID("victim-cgroup")
	victim := filepath.Join("/sys/fs/cgroup/pids", name)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		victim = filepath.Join("/sys/fs/cgroup", name)
	}
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(victim)

	id := ctrtest.NewID("shim-cgroup")
	ctr, err := client.NewContainer(ctx, id, containerd.WithRuntime(ctrtest.ShimRuntime, &options.Options{ShimCgroup: "/" + name}),
		containerd.WithNewSnapshot(id, img), containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "30")))
	if err != nil {
		t.Fatal(err)
	}
	defer ctr.Delete(context.WithoutCancel(ctx), containerd.WithSnapshotCleanup)
	task, err := ctr.NewTask(ctx, cio.NullIO)
	procs, rerr := os.ReadFile(filepath.Join(victim, "cgroup.procs"))
	if err == nil {
		_, _ = task.Delete(ctx, containerd.WithProcessKill)
		t.Errorf("a task whose runc options name the shim's cgroup %s was created", victim)
	} else if !strings.Contains(err.Error(), "ShimCgroup \"/"+name+"\" is refused") {
		t.Errorf("refused for another reason: %v", err)
	}
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(strings.TrimSpace(string(procs))) > 0 {
		t.Errorf("%s held processes the client put there: %s", victim, procs)
	}
}
