package specs

import (
	"slices"
	"testing"

	"github.com/moby/sys/mountinfo"
)

// Where the files at a path come from, in a mount table as a host with
// dockerd shows it: a volume's data is judged as what its options
// mounted there, not as the volume's path.
func TestMountedFromIn(t *testing.T) {
	const vol = "/var/lib/docker/volumes/"
	mounts := []*mountinfo.Info{
		{ID: 20, Major: 8, Minor: 1, Root: "/", Mountpoint: "/"},
		{ID: 21, Major: 0, Minor: 5, Root: "/", Mountpoint: "/dev"},
		{ID: 22, Major: 0, Minor: 20, Root: "/", Mountpoint: "/sys"},
		{ID: 23, Major: 0, Minor: 24, Root: "/", Mountpoint: "/dev/shm"},
		{ID: 30, Major: 8, Minor: 17, Root: "/", Mountpoint: "/srv"},
		{ID: 31, Major: 0, Minor: 60, Root: "/", Mountpoint: "/var/lib/docker/overlay2/abc/merged"},
		{ID: 40, Major: 8, Minor: 1, Root: "/etc", Mountpoint: vol + "etc/_data"},
		{ID: 41, Major: 0, Minor: 24, Root: "/", Mountpoint: vol + "shm/_data"},
		{ID: 42, Major: 0, Minor: 20, Root: "/", Mountpoint: vol + "sysfs/_data"},
		{ID: 43, Major: 0, Minor: 5, Root: "/", Mountpoint: vol + "devtmpfs/_data"},
		{ID: 44, Major: 8, Minor: 1, Root: "/", Mountpoint: vol + "disk/_data"},
		{ID: 45, Major: 0, Minor: 60, Root: "/", Mountpoint: vol + "other-root/_data"},
		{ID: 46, Major: 0, Minor: 61, Root: "/", Mountpoint: vol + "fresh/_data"},
		{ID: 47, Major: 8, Minor: 17, Root: "/", Mountpoint: vol + "srv/_data"},
		{ID: 48, Major: 8, Minor: 17, Root: "/data", Mountpoint: vol + "srv-data/_data"},
		{ID: 50, Major: 0, Minor: 70, Root: "/@home", Mountpoint: "/home"},
		// The kernel gave the volume's bind a freed id below /tmp's own.
		{ID: 9, Major: 0, Minor: 33, Root: "/", Mountpoint: vol + "reused-id/_data"},
		{ID: 51, Major: 0, Minor: 33, Root: "/", Mountpoint: "/tmp"},
		{ID: 52, Major: 0, Minor: 61, Root: "/", Mountpoint: vol + "via-fresh/_data"},
		// An engine's state moved to the data disk and bound to its place.
		{ID: 53, Major: 8, Minor: 17, Root: "/moved/buildkit", Mountpoint: "/var/lib/buildkit"},
	}
	disk := func(p string) string { return vol + "disk/_data" + p }
	for _, c := range []struct {
		path   string
		places []string
	}{
		// The root disk mounted again at a volume shows every file of it.
		{vol + "plain/_data/x", []string{disk(vol + "plain/_data/x")}},
		{"/etc/passwd", []string{vol + "etc/_data/passwd", disk("/etc/passwd")}},
		{"/srv/data", []string{vol + "srv/_data/data", vol + "srv-data/_data"}},
		{"/home/alice/src", nil},
		{vol + "etc/_data/passwd", []string{"/etc/passwd", disk("/etc/passwd")}},
		{vol + "shm/_data", []string{"/dev/shm"}},
		{vol + "sysfs/_data/class/net", []string{"/sys/class/net"}},
		{vol + "devtmpfs/_data", []string{"/dev"}},
		{disk("/etc/shadow"), []string{"/etc/shadow", vol + "etc/_data/shadow"}},
		{vol + "other-root/_data", []string{"/var/lib/docker/overlay2/abc/merged"}},
		{vol + "fresh/_data", []string{vol + "via-fresh/_data"}},
		{vol + "srv/_data/x", []string{"/srv/x"}},
		{vol + "srv-data/_data/x", []string{"/srv/data/x", vol + "srv/_data/data/x"}},
		// Whichever got the lower id (the kernel reuses freed ones).
		{vol + "reused-id/_data", []string{"/tmp"}},
		{"/tmp/x", []string{vol + "reused-id/_data/x"}},
		{vol + "via-fresh/_data/passwd", []string{vol + "fresh/_data/passwd"}},
		// A directory holding files mounted elsewhere: each is a place of
		// a part of it.
		{"/srv/moved", []string{vol + "srv/_data/moved", "/var/lib/buildkit"}},
		{"/srv", []string{vol + "srv/_data", vol + "srv-data/_data", "/var/lib/buildkit"}},
		{"/srv/moved/buildkit/x", []string{vol + "srv/_data/moved/buildkit/x", "/var/lib/buildkit/x"}},
	} {
		holder := deepest(c.path, mounts)
		src := mountedFromIn(c.path, holder.ID, mounts)
		var got []string
		for _, pl := range src.Places {
			got = append(got, pl.Path)
		}
		if src.Holder != holder || !slices.Equal(sorted(got), sorted(c.places)) {
			t.Errorf("%s: places %q, want %q", c.path, got, c.places)
		}
	}
	for _, pl := range mountedFromIn("/srv/moved", 30, mounts).Places {
		if want := map[string]string{"/var/lib/buildkit": "/srv/moved/buildkit"}[pl.Path]; pl.Inner != want {
			t.Errorf("/srv/moved: the place %s shows %q of it, want %q", pl.Path, pl.Inner, want)
		}
	}
	// /mnt/q/x: a bind of /etc on top, and under it a harmless directory
	// propagated there later and listed last. The mount the path shows is
	// the one its descriptor is on.
	tucked := []*mountinfo.Info{
		{ID: 20, Major: 8, Minor: 1, Root: "/", Mountpoint: "/"},
		{ID: 78, Major: 0, Minor: 41, Root: "/", Mountpoint: "/mnt"},
		{ID: 79, Major: 8, Minor: 1, Root: "/etc", Mountpoint: "/mnt/q/x"},
		{ID: 81, Major: 0, Minor: 41, Root: "/innocent", Mountpoint: "/mnt/q/x"},
	}
	if src := mountedFromIn("/mnt/q/x", 79, tucked); len(src.Places) != 1 || src.Places[0].Path != "/etc" {
		t.Errorf("a bind of /etc with a mount tucked under it: places %+v, want /etc", src.Places)
	}
	if src := mountedFromIn("/mnt/q/x/new", -1, mounts); src.Holder == nil || src.Holder.Mountpoint != "/" {
		t.Errorf("a source not there yet: holder %+v, want the deepest mount its path is below", src.Holder)
	}
	if src := mountedFromIn("/mnt/q/x", 99, tucked); src.Holder != nil {
		t.Errorf("a mount id the table does not hold: holder %+v, want none", src.Holder)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// deepest is the mount a path is on in a table without tucked mounts.
func deepest(p string, mounts []*mountinfo.Info) *mountinfo.Info {
	var d *mountinfo.Info
	for _, m := range mounts {
		if under(p, m.Mountpoint) && (d == nil || len(m.Mountpoint) > len(d.Mountpoint)) {
			d = m
		}
	}
	return d
}

// Files a named volume's options mounted are refused when their
// filesystem is mounted nowhere outside the engines' state, whether the
// source is that volume or a bind of it; a plain volume, a volume whose
// files are also at a host path (judged there), and the engines' own
// mounts are not this rule's.
func TestVolumeMountRefusal(t *testing.T) {
	const vol = "/var/lib/docker/volumes/"
	m := func(mountpoint, root, fstype string) *mountinfo.Info {
		return &mountinfo.Info{Mountpoint: mountpoint, Root: root, FSType: fstype, Source: fstype}
	}
	ovl := m(vol+"v/_data", "/", "overlay")
	for _, c := range []struct {
		name, path string
		src        MountSource
		refused    bool
	}{
		{"an overlay the volume's options mounted", vol + "v/_data/passwd", MountSource{Holder: ovl}, true},
		{"a bind of that volume's data", vol + "w/_data", MountSource{Holder: m(vol+"w/_data", "/", "overlay"), Places: []Place{{Path: vol + "v/_data", Mount: ovl}}}, true},
		{"a pod's subPath bind of it", "/var/lib/kubelet/pods/p/volume-subpaths/v/c/0", MountSource{Holder: m("/var/lib/kubelet/pods/p/volume-subpaths/v/c/0", "/", "overlay"), Places: []Place{{Path: vol + "v/_data", Mount: ovl}}}, true},
		{"a tmpfs a podman volume's options mounted", "/var/lib/containers/storage/volumes/v/_data", MountSource{Holder: m("/var/lib/containers/storage/volumes/v/_data", "/", "tmpfs")}, true},
		{"a plain volume", vol + "plain/_data", MountSource{Holder: m("/", "/", "ext4")}, false},
		{"a plain volume on the data root's own disk", vol + "plain/_data", MountSource{Holder: m("/var/lib/docker", "/", "ext4")}, false},
		{"a volume bound to /dev/shm", vol + "shm/_data", MountSource{Holder: m(vol+"shm/_data", "/", "tmpfs"), Places: []Place{{Path: "/dev/shm", Mount: m("/dev/shm", "/", "tmpfs")}}}, false},
		{"a container's own /dev/shm", "/var/lib/docker/containers/c/mounts/shm", MountSource{Holder: m("/var/lib/docker/containers/c/mounts/shm", "/", "tmpfs")}, false},
		{"a host directory on its own filesystem", "/srv/data", MountSource{Holder: m("/srv", "/", "ext4")}, false},
	} {
		if why := volumeMountRefusal(c.path, c.src); (why != "") != c.refused {
			t.Errorf("%s: refusal %q, want refused %v", c.name, why, c.refused)
		}
	}
}
