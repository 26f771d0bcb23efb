package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/workspace"
)

// benchOverlayFloor times, on the host and with no container, the walk the
// "find" job does (read every directory, lstat every entry) over the
// checkout itself and over a fresh overlay stacked as a workspace is: an
// id-mapped lower layer swapping the owner 1000 with the sandbox's 65534,
// a tmpfs upper, bulkhead's options. Its ratio is overlayfs's own cost per
// name, which no runtime can take off a job that stats every file.
func benchOverlayFloor(dir, src string, n int) error {
	base := filepath.Join(dir, "floor")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	walk := func(root string) (time.Duration, error) {
		start := time.Now()
		err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			var st unix.Stat_t
			return unix.Lstat(p, &st)
		})
		return time.Since(start), err
	}
	overlay := func(i int) (time.Duration, error) {
		lower, upper, merged := filepath.Join(base, "lower"), filepath.Join(base, "upper"), filepath.Join(base, "merged")
		for _, d := range []string{lower, upper, merged} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return 0, err
			}
		}
		if err := unix.Mount("tmpfs", upper, "tmpfs", 0, "size=16m"); err != nil {
			return 0, err
		}
		defer unix.Unmount(upper, unix.MNT_DETACH)
		userns, err := mount.GetUsernsFD(workspace.SwapMapping(1000, 65534), workspace.SwapMapping(1000, 65534))
		if err != nil {
			return 0, err
		}
		defer userns.Close()
		if err := mount.IDMapMountWithAttrs(src, lower, int(userns.Fd()), unix.MOUNT_ATTR_RDONLY, 0); err != nil {
			return 0, fmt.Errorf("id-mapped lower: %w", err)
		}
		defer unix.Unmount(lower, unix.MNT_DETACH)
		for _, d := range []string{"u", "w"} {
			if err := os.Mkdir(filepath.Join(upper, d), 0o700); err != nil {
				return 0, err
			}
		}
		opts := fmt.Sprintf("lowerdir=%s,upperdir=%s/u,workdir=%s/w,redirect_dir=off,metacopy=off,index=off", lower, upper, upper)
		if err := unix.Mount(fmt.Sprintf("floor%d", i), merged, "overlay", 0, opts); err != nil {
			return 0, fmt.Errorf("overlay: %w", err)
		}
		defer unix.Unmount(merged, unix.MNT_DETACH)
		return walk(merged)
	}
	if _, err := walk(src); err != nil { // the source's own dentries warm, as for the jobs
		return err
	}
	var to, tp []time.Duration
	for i := 0; i < n; i++ {
		d, err := overlay(i)
		if err != nil {
			return err
		}
		to = append(to, d)
		if d, err = walk(src); err != nil {
			return err
		}
		tp = append(tp, d)
	}
	fmt.Printf("\noverlayfs alone: walk and lstat of the %d files on the host, no container\n", workspaceFiles)
	mo, mp := stats("host", "fresh overlay", to), stats("host", "the checkout", tp)
	fmt.Printf("%-8s median ratio fresh overlay/checkout: %.2f (+%.1fms: overlayfs's own share of the \"find\" job's difference)\n",
		"host", float64(mo)/float64(mp), float64((mo-mp).Microseconds())/1000)
	return nil
}
