package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// TestPinsJudgeTheOpenedBundle: between the rules and the pins the caller
// renames its bundle away and puts another directory, or a symlink to one,
// at its path. The root must be the judged bundle's, or refused; never
// the other directory's. Before the bundle was opened once, the pin
// re-resolved the bundle's path: with a symlink to / there, a host
// directory outside the bundle was accepted as the root.
func TestPinsJudgeTheOpenedBundle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("pins are bind mounts: needs root")
	}
	for _, tc := range []struct {
		name    string
		root    func(bundle string) string
		refused bool
	}{
		{"relative root.path follows the judged directory", func(string) string { return "rootfs" }, false},
		{"absolute root.path into the swapped path is refused", func(b string) string { return filepath.Join(b, "rootfs") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			bundle, other := filepath.Join(tmp, "bundle"), filepath.Join(tmp, "other")
			for _, d := range []string{bundle + "/rootfs", other + "/rootfs"} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			reg, err := state.OpenRegistry(filepath.Join(tmp, "state"))
			if err != nil {
				t.Fatal(err)
			}
			id := "pin-swap"
			if err := os.MkdirAll(reg.Dir(id), 0o700); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := reg.Remove(id); err != nil {
					t.Errorf("remove: %v", err)
				}
			})
			dir, err := openBundleDir(bundle)
			if err != nil {
				t.Fatal(err)
			}
			defer dir.close()
			p := specs.DefaultProfile()
			handed := &rspec.Spec{Root: &rspec.Root{Path: tc.root(bundle)}}
			pins, _ := planPins(handed, nil, dir.at, reg.Dir(id))
			c := &creation{reg: reg, rec: &state.Record{ID: id}, bundle: bundle, bundleDir: dir,
				ctx:    &specs.Context{Profile: &p, Bundle: bundle, ID: id},
				handed: handed, plan: &Plan{Pins: pins}}

			// The swap: the judged bundle moves away, a symlink to the other
			// directory takes its path.
			if err := os.Rename(bundle, filepath.Join(tmp, "judged")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, bundle); err != nil {
				t.Fatal(err)
			}

			err = c.pinHostPaths()
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "outside the bundle") {
					t.Fatalf("pinHostPaths = %v, want the root refused as outside the bundle", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("pinHostPaths: %v", err)
			}
			var pinned, judged, swapped unix.Stat_t
			for p, st := range map[string]*unix.Stat_t{c.handed.Root.Path: &pinned,
				filepath.Join(tmp, "judged", "rootfs"): &judged, filepath.Join(other, "rootfs"): &swapped} {
				if err := unix.Stat(p, st); err != nil {
					t.Fatal(err)
				}
			}
			if pinned.Ino != judged.Ino || pinned.Dev != judged.Dev {
				t.Fatalf("pinned root is inode %d, want the judged bundle's rootfs %d (the swapped-in one is %d)",
					pinned.Ino, judged.Ino, swapped.Ino)
			}
		})
	}
}

// TestOpenBundleDirNamesWhatItOpened: a bundle is named by its real path,
// and one reached through a link of /proc is refused: /proc/<pid>/root
// reads as a host path while the kernel follows it into that process's
// mount namespace, where the caller may have covered an engine's bundle.
func TestOpenBundleDirNamesWhatItOpened(t *testing.T) {
	tmp := t.TempDir()
	real := filepath.Join(tmp, "bundle")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	dir, err := openBundleDir(link)
	if err != nil {
		t.Fatal(err)
	}
	dir.close()
	if dir.path != real {
		t.Errorf("bundle %s named %s, want its real path %s", link, dir.path, real)
	}
	for _, p := range []string{"/proc/self/root" + real, "/proc/self/cwd", "/proc/self/root/proc/self/cwd"} {
		if dir, err := openBundleDir(p); err == nil || !strings.Contains(err.Error(), "link of /proc") {
			dir.close()
			t.Errorf("bundle %s: %v, want refused for the link of /proc", p, err)
		}
	}
}
