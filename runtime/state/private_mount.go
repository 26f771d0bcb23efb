package state

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// PrivateMountPoint bind-mounts dir onto itself and makes that mount
// private, before anything is mounted below it. Where the mount holding
// the state root is shared, each mount made below it was copied to every
// peer and slave of that mount (a container with an rslave bind of a
// directory above the state root among them) before it could be made
// private itself; below a private mount nothing reaches another mount
// namespace. The copies of dir itself that do are empty directories,
// and unmounting the state directory takes them with it.
func PrivateMountPoint(dir string) error {
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s onto itself: %w", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make %s private: %w", dir, err)
	}
	return nil
}
