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

// volumeMountRefusal refuses the data of a named volume that is a
// filesystem the volume's driver options mounted there and nowhere else
// (type=overlay with any lowerdir, tmpfs, nfs, a fresh bpf). A volume is
// allowed as the engine's own file because the engine made its directory;
// what the options mount is the caller's choice, and such a filesystem has
// no host path the rules could judge. A bind of a host path
// (o=bind,device=...) or of a filesystem mounted elsewhere first is
// judged as that path before this (mountedFromIn). holder is the mount
// that holds real.
func volumeMountRefusal(real string, holder *mountinfo.Info) string {
	m := namedVolume().FindStringSubmatch(real)
	if m == nil || holder == nil || !under(holder.Mountpoint, m[1]) {
		return ""
	}
	return fmt.Sprintf("%s is in volume %s, whose data is a filesystem of type %s (source %q) that the volume's driver options mounted at %s and nowhere else on the host, so its files cannot be judged; use a plain local volume, --tmpfs for scratch space, or a bind of a host directory below bind_roots",
		real, filepath.Base(m[1]), holder.FSType, holder.Source, holder.Mountpoint)
}
