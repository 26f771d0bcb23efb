package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	units "github.com/docker/go-units"
	"github.com/moby/sys/mountinfo"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

// MountExpectation is one mount of the handed spec as the kernel must show
// it: the per-mount flags it asked for, and for a tmpfs the most it may
// hold.
type MountExpectation struct {
	Destination string
	Type        string
	Flags       []string // of ro, nosuid, nodev, noexec
	TmpfsBytes  int64    // 0: not a tmpfs, or no size asked; -1: a size not understood
}

// flagsVerified are the per-mount flags the policy sets and the host can
// read back in mountinfo.
var flagsVerified = []string{"ro", "nosuid", "nodev", "noexec"}

// expectMounts takes each mount of the handed spec with the flags it
// asks for. Every profile makes /sys and cgroupfs read-only and /tmp
// noexec, nosuid and nodev, so those hold whatever the handed spec says.
func expectMounts(s *rspec.Spec) []MountExpectation {
	var out []MountExpectation
	for _, m := range s.Mounts {
		e := MountExpectation{Destination: filepath.Clean(m.Destination), Type: m.Type}
		for _, f := range flagsVerified {
			if slices.Contains(m.Options, f) {
				e.Flags = append(e.Flags, f)
			}
		}
		switch {
		case m.Type == "sysfs" || m.Type == "cgroup" || m.Type == "cgroup2":
			e.Flags = union(e.Flags, "ro")
		case m.Type == "tmpfs" && e.Destination == "/tmp":
			e.Flags = union(e.Flags, "nosuid", "nodev", "noexec")
		}
		if m.Type == "tmpfs" {
			for _, o := range m.Options {
				if v, ok := strings.CutPrefix(o, "size="); ok {
					// As the mounts rule reads it: the kernel's suffixes,
					// either case.
					if n, err := units.RAMInBytes(v); err == nil && n > 0 {
						e.TmpfsBytes = n
					} else {
						e.TmpfsBytes = -1
					}
				}
			}
		}
		out = append(out, e)
	}
	return out
}

// union is have with each of want it lacks appended.
func union(have []string, want ...string) []string {
	seen := make(map[string]bool, len(have)+len(want))
	for _, h := range have {
		seen[h] = true
	}
	for _, w := range want {
		if !seen[w] {
			seen[w] = true
			have = append(have, w)
		}
	}
	return have
}

// verifyMounts reads the container's mount table, as its init sees it,
// and checks that every mount the handed spec asks for is there with its
// flags and tmpfs size, that each masked path is covered by a mount and
// each read-only path is mounted read-only (or absent from the container,
// where runc skips it). A destination is looked up where it resolves in
// the container, as runc resolved it.
func verifyMounts(r *Report, pid int, table []*mountinfo.Info, e *Expectation) error {
	root := fmt.Sprintf("/proc/%d/root", pid)
	// The last entry at a mount point is the one on top.
	top := map[string]*mountinfo.Info{}
	for _, m := range table {
		top[m.Mountpoint] = m
	}
	// A destination is looked up where runc placed it, through the
	// container's links but none into /proc or /sys, whose links read
	// differently now than while runc mounted (specs.PlaceIn).
	at := func(dest string) (string, *mountinfo.Info, error) {
		p, err := specs.PlaceIn(root, dest)
		if err != nil {
			return dest, nil, err
		}
		return p, top[p], nil
	}

	var bad []string
	for i, want := range e.Mounts {
		if slices.ContainsFunc(e.Mounts[i+1:], func(later MountExpectation) bool { return later.Destination == want.Destination }) {
			continue // mounted over: the later one is on top
		}
		p, m, err := at(want.Destination)
		if err != nil {
			bad = append(bad, want.Destination+" cannot be located: "+err.Error())
			continue
		}
		if m == nil {
			bad = append(bad, want.Destination+" not mounted")
			continue
		}
		flags := want.Flags
		if want.Type == "cgroup" && m.FSType == "tmpfs" {
			// cgroup v1: runc mounts a tmpfs there (root's, mode 755) and
			// each hierarchy below it; runc 1.1 leaves the tmpfs itself
			// writable, so ro is what each hierarchy must show.
			flags = slices.DeleteFunc(slices.Clone(flags), func(f string) bool { return f == "ro" })
			bad = append(bad, hierarchiesWithout(table, p, want.Flags)...)
		}
		bad = append(bad, missingFlags(p, m, flags)...)
		if want.TmpfsBytes < 0 {
			bad = append(bad, p+": the handed size is not one verification reads")
		}
		if want.TmpfsBytes > 0 {
			// The kernel rounds a tmpfs's size up to whole pages.
			page := int64(os.Getpagesize())
			most := (want.TmpfsBytes + page - 1) / page * page
			if got := superSize(m.VFSOptions); m.FSType != "tmpfs" || got <= 0 || got > most {
				bad = append(bad, fmt.Sprintf("%s %s %s, not a tmpfs of at most %d bytes", p, m.FSType, m.VFSOptions, want.TmpfsBytes))
			}
		}
	}
	r.addAll("mount flags", "every mount with the flags and size handed", bad)

	bad = nil
	for _, path := range e.MaskedPaths {
		p, m, err := at(path)
		if err != nil {
			return fmt.Errorf("verify: masked path %s: %w", path, err)
		}
		if m == nil && present(root, p) {
			bad = append(bad, p+" not masked")
		}
	}
	r.addAll("masked paths", "every masked path covered or absent", bad)

	bad = nil
	for _, path := range e.ReadonlyPaths {
		p, m, err := at(path)
		if err != nil {
			return fmt.Errorf("verify: read-only path %s: %w", path, err)
		}
		switch {
		case m != nil && !hasOption(m, "ro"):
			bad = append(bad, p+" mounted "+m.Options)
		case m == nil && present(root, p):
			bad = append(bad, p+" not mounted read-only")
		}
	}
	r.addAll("read-only paths", "every read-only path mounted ro or absent", bad)
	return nil
}

// hierarchiesWithout names each cgroup v1 hierarchy mounted below dir
// without one of flags.
func hierarchiesWithout(table []*mountinfo.Info, dir string, flags []string) []string {
	var bad []string
	n := 0
	for _, m := range table {
		if m.FSType != "cgroup" || !strings.HasPrefix(m.Mountpoint, dir+"/") {
			continue
		}
		n++
		bad = append(bad, missingFlags(m.Mountpoint, m, flags)...)
	}
	if n == 0 {
		bad = append(bad, dir+" is a tmpfs with no cgroup hierarchy below it")
	}
	return bad
}

// mountTable is the mount table pid sees, read once for every mount check.
func mountTable(pid int) ([]*mountinfo.Info, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return nil, fmt.Errorf("verify: mountinfo of %d: %w", pid, err)
	}
	defer f.Close()
	table, err := mountinfo.GetMountsFromReader(f, nil)
	if err != nil {
		return nil, fmt.Errorf("verify: mountinfo of %d: %w", pid, err)
	}
	return table, nil
}

// hasOption tells whether m carries the per-mount option o (ro, nosuid...).
func hasOption(m *mountinfo.Info, o string) bool {
	return slices.Contains(strings.Split(m.Options, ","), o)
}

// missingFlags names each of flags that m, shown at p, lacks.
func missingFlags(p string, m *mountinfo.Info, flags []string) []string {
	var bad []string
	for _, fl := range flags {
		if !hasOption(m, fl) {
			bad = append(bad, fmt.Sprintf("%s %s without %s", p, m.Options, fl))
		}
	}
	return bad
}

// addAll is one check over many items: it holds when none was bad, and
// then observed is what was expected.
func (r *Report) addAll(control, expected string, bad []string) {
	observed := expected
	if len(bad) > 0 {
		observed = strings.Join(bad, "; ")
	}
	*r = append(*r, Check{Control: control, Expected: expected, Observed: observed, OK: len(bad) == 0})
}

// present tells whether path exists in the container whose root is root;
// a path that cannot be looked up for another reason counts as present,
// so that it must be masked.
func present(root, path string) bool {
	_, err := os.Lstat(root + path)
	return !errors.Is(err, os.ErrNotExist)
}

// superSize is the size= of a tmpfs's superblock options, in bytes; 0 for
// none.
func superSize(vfs string) int64 {
	for _, o := range strings.Split(vfs, ",") {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			n, _ := units.RAMInBytes(v)
			return n
		}
	}
	return 0
}

// expectPaths is the profile's masked and read-only paths with those the
// handed spec adds.
func expectPaths(s *rspec.Spec) (masked, readonly []string) {
	masked = slices.Clone(specs.DefaultMaskedPaths)
	readonly = slices.Clone(specs.DefaultReadonlyPaths)
	if s != nil && s.Linux != nil {
		masked = union(masked, s.Linux.MaskedPaths...)
		readonly = union(readonly, s.Linux.ReadonlyPaths...)
	}
	return masked, readonly
}
