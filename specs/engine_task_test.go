package specs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEngineFilesOfTheTasksEngine: a container's own files in Docker's
// data root, or in containerd's CRI directories, are this container's
// only when the engine that made them made this task: ids are an
// engine's, and a client of another containerd, or of another namespace,
// names a Docker or CRI container's id as its own task's.
func TestEngineFilesOfTheTasksEngine(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: engine state and the work link are root's")
	}
	dir := t.TempDir()
	docker := filepath.Join(dir, "docker")
	layout(t, docker, "containers/"+testID+"/hosts", "image/", "network/", "volumes/", "containerd/daemon/")
	hosts := filepath.Join(docker, "containers", testID, "hosts")
	ctrd := filepath.Join(dir, "containerd")
	layout(t, ctrd, "io.containerd.metadata.v1.bolt/", "io.containerd.grpc.v1.cri/containers/"+testID+"/volumes/v/f")
	volume := filepath.Join(ctrd, "io.containerd.grpc.v1.cri", "containers", testID, "volumes", "v")
	other := filepath.Join(dir, "other")
	layout(t, other, "io.containerd.metadata.v1.bolt/")
	// An image's layer as a snapshotter unpacked it, root's throughout,
	// holding a task's layout whose work link names dockerd's task.
	layer := filepath.Join(dir, "snapshotter")
	inLayer := filepath.Join(layer, "snapshots/1/fs/x/io.containerd.runtime.v2.task/moby", testID)
	layout(t, layer, "metadata.db", "snapshots/1/fs/x/io.containerd.runtime.v2.task/moby/"+testID+"/")
	if err := os.Symlink(filepath.Join(docker, "containerd/daemon/io.containerd.runtime.v2.task/moby", testID), filepath.Join(inLayer, "work")); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name         string
		c            *Context
		file, engine string
		want         bool
	}{
		{"dockerd's own containerd's task", taskBundle(t, filepath.Join(docker, "containerd", "daemon"), "moby", testID), hosts, "docker", true},
		{"another containerd's task in namespace moby", taskBundle(t, other, "moby", testID), hosts, "docker", false},
		{"dockerd's containerd, another namespace", taskBundle(t, filepath.Join(docker, "containerd", "daemon"), "tenant", testID), hosts, "docker", false},
		{"no task", &Context{Bundle: "/bundle", ID: testID}, hosts, "docker", false},
		{"a task laid out in an image's layer, working in dockerd's containerd", &Context{Bundle: inLayer, ID: testID}, hosts, "docker", false},
		{"the CRI's containerd's task", taskBundle(t, ctrd, "k8s.io", testID), volume, "containerd", true},
		{"another containerd's task", taskBundle(t, other, "k8s.io", testID), volume, "containerd", false},
	} {
		c := tt.c
		if got := c.engineTask(tt.engine, tt.file); got != tt.want {
			t.Errorf("%s: %s's file %s is this task's: %v, want %v", tt.name, tt.engine, tt.file, got, tt.want)
		}
	}
}
