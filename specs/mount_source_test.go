package specs

import (
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
	}
	for _, c := range []struct{ path, want, holder string }{
		{"/var/lib/docker/volumes/plain/_data/x", "/var/lib/docker/volumes/plain/_data/x", "/"},
		{"/srv/data", "/srv/data", "/srv"},
		{"/home/alice/src", "/home/alice/src", "/home"},
		{vol + "etc/_data/passwd", "/etc/passwd", vol + "etc/_data"},
		{vol + "shm/_data", "/dev/shm", vol + "shm/_data"},
		{vol + "sysfs/_data/class/net", "/sys/class/net", vol + "sysfs/_data"},
		{vol + "devtmpfs/_data", "/dev", vol + "devtmpfs/_data"},
		{vol + "disk/_data/etc/shadow", "/etc/shadow", vol + "disk/_data"},
		{vol + "other-root/_data", "/var/lib/docker/overlay2/abc/merged", vol + "other-root/_data"},
		{vol + "fresh/_data", vol + "fresh/_data", vol + "fresh/_data"},
		{vol + "srv/_data/x", "/srv/x", vol + "srv/_data"},
		{vol + "srv-data/_data/x", "/srv/data/x", vol + "srv-data/_data"},
		{vol + "reused-id/_data", "/tmp", vol + "reused-id/_data"},
		{"/tmp/x", "/tmp/x", "/tmp"},
		// A volume bound to another's overlay, the other mounted first:
		// judged as the other volume's data, on the other's mount.
		{vol + "via-fresh/_data/passwd", vol + "fresh/_data/passwd", vol + "via-fresh/_data"},
	} {
		holder := deepest(c.path, mounts)
		src := mountedFromIn(c.path, holder.ID, mounts)
		if src.From != c.want || src.Holder == nil || src.Holder.Mountpoint != c.holder || src.Home == nil {
			t.Errorf("%s: %+v, want from %s held by %s", c.path, src, c.want, c.holder)
		}
	}
	if src := mountedFromIn(vol+"via-fresh/_data", 52, mounts); src.Home == nil || src.Home.Mountpoint != vol+"fresh/_data" {
		t.Errorf("a bind of another volume's overlay: home %+v, want that volume's mount", src.Home)
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
	if src := mountedFromIn("/mnt/q/x", 79, tucked); src.From != "/etc" {
		t.Errorf("a bind of /etc with a mount tucked under it: judged as %s, want /etc", src.From)
	}
	if src := mountedFromIn("/mnt/q/x", 99, tucked); src.Holder != nil {
		t.Errorf("a mount id the table does not hold: holder %+v, want none", src.Holder)
	}
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

// A named volume's data that its options mounted as a filesystem of its
// own is refused; a plain volume's, or data judged as a host path, is not
// this rule's.
func TestVolumeMountRefusal(t *testing.T) {
	const vol = "/var/lib/docker/volumes/"
	fresh := &mountinfo.Info{Mountpoint: vol + "v/_data", Root: "/", FSType: "overlay", Source: "overlay"}
	root := &mountinfo.Info{Mountpoint: "/", Root: "/", FSType: "ext4", Source: "/dev/vda1"}
	if why := volumeMountRefusal(vol+"v/_data/etc/passwd", fresh); why == "" {
		t.Error("an overlay the volume's options mounted: not refused")
	}
	podman := &mountinfo.Info{Mountpoint: "/var/lib/containers/storage/volumes/v/_data", Root: "/", FSType: "tmpfs", Source: "tmpfs"}
	if why := volumeMountRefusal("/var/lib/containers/storage/volumes/v/_data", podman); why == "" {
		t.Error("a tmpfs a podman volume's options mounted: not refused")
	}
	if why := volumeMountRefusal(vol+"plain/_data", root); why != "" {
		t.Errorf("a plain volume: %s", why)
	}
	if why := volumeMountRefusal("/srv/data", &mountinfo.Info{Mountpoint: "/srv", Root: "/"}); why != "" {
		t.Errorf("a host directory on its own filesystem: %s", why)
	}
}
