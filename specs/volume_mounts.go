package specs

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/moby/sys/mountinfo"
)

// namedVolume matches the data of a named volume of the engines that keep
// one as a directory of their own (Docker's and Podman's local driver);
// the group is the volume's directory.
var namedVolume = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^((/var/lib/docker|/var/lib/containers/storage)/volumes/[^/]+)/_data(/.*)?$`)
})

// volumeMountRefusal refuses files that a named volume's driver options
// mounted (the volume's data, at real or at one of the places its files
// are also at, is a mount of its own: type=overlay with any lowerdir, a
// tmpfs, NFS, a fresh bpf) when their filesystem has no mount outside the
// engines' state directories. A volume is allowed as the engine's own file
// because the engine made its directory; what the options mount is the
// caller's choice, and such a filesystem has no host path the rules could
// judge. A filesystem mounted outside the engines' state as well (a bind
// of /dev/shm or of a host directory, a second sysfs) is judged at that
// place instead (placeRefusal).
func volumeMountRefusal(real string, src MountSource) string {
	if src.Holder == nil {
		return ""
	}
	var vol string
	var mount *mountinfo.Info
	for _, pl := range append([]Place{{Path: real, Mount: src.Holder}}, src.Places...) {
		if pl.Inner != "" {
			continue // shows part of the files only
		}
		if !inStateDir(pl.Mount.Mountpoint) {
			return ""
		}
		if m := namedVolume().FindStringSubmatch(judgedPath(pl.Path)); m != nil && under(judgedPath(pl.Mount.Mountpoint), m[1]) && vol == "" {
			vol, mount = m[1], pl.Mount
		}
	}
	if vol == "" {
		return ""
	}
	return fmt.Sprintf("%s is the data of volume %s, a filesystem of type %s (source %q) that the volume's driver options mounted at %s and that is mounted nowhere outside the engines' state, so its files cannot be judged; use a plain local volume, --tmpfs for scratch space, or a bind of a host directory below bind_roots",
		real, filepath.Base(vol), mount.FSType, mount.Source, mount.Mountpoint)
}
