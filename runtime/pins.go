package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/seccompexec"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/workspace"
	"bulkhead.dev/bulkhead/specs"
)

// The bundle is the caller's: between the rules' check and the backend's
// create, the caller can rename another config.json over the one the
// rules judged, or point a symlink the rules followed somewhere else, and the
// backend, which reads and resolves everything again, would run what was
// never judged. So in enforce mode bulkhead hands the backend a bundle of
// its own in the root-only state directory, whose config.json names only
// paths the caller cannot change: the root filesystem and every bind
// source are opened once, judged again by what the opened file really is,
// and bind-mounted from that descriptor onto a private pin. Pins are
// unmounted with everything else under the state directory on delete and
// on any failed create. The caller's config.json itself is never written.
const (
	pinsDir          = "pins"
	privateBundleDir = "bundle"
)

// hostPin is one host path the hand-over pins: the path as the spec
// named it (resolved against the bundle) and the pin the private bundle
// names instead.
type hostPin struct {
	Rule, Field    string
	Source, Target string
	// Root: judged as the root filesystem; Own: as a file of bulkhead's
	// own (ownFileRefusal); else as a bind source.
	Root, Own bool
	// ReadOnly: the pin of a bind source itself is a read-only mount.
	// The root's is an overlay where its judgement says its files are
	// the host's (pinOverlaid).
	ReadOnly bool
}

// planPins rewrites the handed spec's root and bind sources, and the
// workspaces' lower directories, to their pins below stateDir, and
// returns the pins with a decision per rewritten path. Binds of a
// workspace's merged directory are bulkhead's own and not pinned.
func planPins(s *rspec.Spec, ws []workspace.Workspace, at func(string) string, stateDir string) ([]hostPin, []specs.Decision) {
	dir := filepath.Join(stateDir, pinsDir)
	var pins []hostPin
	var ds []specs.Decision
	add := func(rule, field, src string, root, own bool) string {
		target := filepath.Join(dir, strconv.Itoa(len(pins)))
		pins = append(pins, hostPin{Rule: rule, Field: field, Source: at(src), Target: target, Root: root, Own: own})
		ds = append(ds, specs.Decision{Rule: rule, Field: field, Action: specs.Kept, Before: src, After: target, Layer: specs.LayerNone,
			Why: "pinned: the backend gets bulkhead's bind of the very file judged, which the caller cannot swap before the backend opens it"})
		return target
	}
	if s.Root != nil {
		s.Root.Path = add("root", "root.path", s.Root.Path, true, false)
	}
	merged := map[string]bool{}
	for _, w := range ws {
		merged[w.Merged()] = true
	}
	for i := range s.Mounts {
		m := &s.Mounts[i]
		if !specs.IsBind(*m) || merged[m.Source] {
			continue
		}
		switch m.Destination {
		case egressForwarderPath:
			// addEgressForwarder's own bind, judged as seccomp-exec is.
			m.Source = add("egress", "mounts["+m.Destination+"]", m.Source, false, true)
		case seccompexec.Path:
			// planSeccompExec's own bind; no caller's mount may be there.
			m.Source = add("seccomp", "mounts["+m.Destination+"]", m.Source, false, true)
		default:
			m.Source = add("host_mounts", "mounts["+m.Destination+"]", m.Source, false, false)
		}
		pins[len(pins)-1].ReadOnly = slices.Contains(m.Options, "ro")
	}
	for i := range ws {
		w := &ws[i]
		w.Source = add("workspace", "mounts["+w.Destination+"] lower", w.Source, false, false)
		pins[len(pins)-1].ReadOnly = true
	}
	return pins, ds
}

// pinHostPaths makes the plan's pins: each source is opened, judged again
// by what it really is, and bind-mounted onto its pin. It runs once the
// state directory exists, before the workspaces are mounted.
func (c *creation) pinHostPaths() error {
	if len(c.plan.Pins) == 0 {
		return nil
	}
	dir := filepath.Join(c.reg.Dir(c.rec.ID), pinsDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	if err := state.PrivateMountPoint(dir); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	for _, p := range c.plan.Pins {
		as := pinWritable
		if p.ReadOnly {
			as = pinReadOnly
		}
		judge := func(real string, fd int, _ *unix.Stat_t) (string, pinAs) {
			if why := specs.JudgeBindSource(c.ctx, c.handed.Annotations, real, fd); why != "" {
				return why, as
			}
			return specs.HomePrivacyRefusal(c.ctx, real, fd, true), as
		}
		switch {
		case p.Rule == "workspace":
			judge = func(real string, fd int, _ *unix.Stat_t) (string, pinAs) {
				if why := specs.JudgeBindSource(c.ctx, c.handed.Annotations, real, fd); why != "" {
					return why, as
				}
				if why := specs.HomePrivacyRefusal(c.ctx, real, fd, false); why != "" {
					return why, as
				}
				return workspace.JudgeSource(real, "/proc/self/fd/"+strconv.Itoa(fd)), as
			}
		case p.Own:
			judge = func(real string, _ int, st *unix.Stat_t) (string, pinAs) { return ownFileRefusal(real, st), as }
		case p.Root:
			judge = func(real string, fd int, _ *unix.Stat_t) (string, pinAs) {
				bundleReal, err := c.bundleDir.real()
				if err != nil {
					return err.Error(), as
				}
				why, hostFiles := specs.JudgeRoot(c.ctx, c.handed.Annotations, real, bundleReal, fd)
				if hostFiles {
					return why, pinOverlaid
				}
				return why, as
			}
		}
		if _, err := pinPath(p.Source, p.Target, judge); err != nil {
			rule := p.Rule
			if rule == "workspace" {
				rule = "host_mounts"
			}
			return &refusal{rule: rule, field: strings.TrimSuffix(p.Field, " lower"), err: err}
		}
	}
	return nil
}

// pinAs is how a pin shows what was judged.
type pinAs int

const (
	pinWritable pinAs = iota
	// pinReadOnly: a read-only bind.
	pinReadOnly
	// pinOverlaid: an overlay whose only lower layer is what was judged
	// and whose upper layer is a small tmpfs of the pin's own, for a root
	// filesystem of the host's files (specs.JudgeRoot): the backend, as
	// root, makes the spec's mount points in a root before it is
	// read-only, in the tmpfs then, never in the host's directory.
	pinOverlaid
)

// pinPath opens src as the backend would (following symlinks), judges
// what was opened by its real path, its descriptor and its attributes, and bind-mounts
// that very file or directory, through its descriptor, onto target, as
// the judgement says (pinAs). No path is resolved again after the
// judgement.
func pinPath(src, target string, judge func(real string, fd int, st *unix.Stat_t) (why string, as pinAs)) (string, error) {
	fd, err := unix.Open(src, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", src, err)
	}
	defer unix.Close(fd)
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	real, err := os.Readlink(self)
	if err != nil {
		return "", fmt.Errorf("%s: %w", src, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("%s: %w", src, err)
	}
	why, as := judge(real, fd, &st)
	if why != "" {
		return "", fmt.Errorf("%s is now %s: %s", src, real, why)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		err = os.Mkdir(target, 0o700)
	case unix.S_IFREG:
		err = os.WriteFile(target, nil, 0o600)
	default:
		return "", fmt.Errorf("%s (%s) is neither a directory nor a regular file", src, real)
	}
	if err != nil {
		return "", err
	}
	if as == pinOverlaid {
		if err := overlayPin(self, target, fd); err != nil {
			return "", fmt.Errorf("pin %s: %w", real, err)
		}
	} else if err := unix.Mount(self, target, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("pin %s: %w", real, err)
	}
	// The spec's ro is the backend's to apply, in the container, and a
	// backend running as root writes through the pin before it does:
	// runsc's gofer makes each missing mount point of a bind nested in
	// another in the outer bind's host source (root's, for good), where
	// runc, which remounts the outer bind first, meets EROFS. A read-only
	// pin holds for every backend and helper; only the attributes named
	// change, the source mount's others (noexec) stay.
	if as == pinReadOnly {
		ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(unix.AT_FDCWD, target, 0, &ro); err != nil {
			return "", fmt.Errorf("pin %s: make it read-only: %w", real, err)
		}
	}
	// A bind of a shared mount joins its peer group, and an unmount below a
	// peer propagates to every other: taking the pins down on delete would
	// unmount what the host mounted below a shared source since the start.
	// Every pin is private: it receives nothing mounted below the source
	// later, which nothing judged and which need not be the host's (a
	// volume's driver options mounted onto a plain volume's data by its
	// next container; a containerd client's next task, whose rootfs mounts
	// bind the same shared directory, or this task's rootfs, and mount
	// another tenant's image below it), and sends nothing back.
	if err := unix.Mount("", target, "", unix.MS_PRIVATE, ""); err != nil {
		return "", fmt.Errorf("pin %s: make it private: %w", real, err)
	}
	return target, nil
}

// overlayPin mounts at target an overlay of the directory opened at fd
// (self names it) over an upper layer on a tmpfs of 1 MiB, which only the
// overlay keeps once it is mounted: nothing else names it, and delete's
// unmount of target frees it. The overlay is nosuid and nodev, and noexec
// where the directory's own mount is.
func overlayPin(self, target string, fd int) error {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return err
	}
	scratch := target + "-upper"
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return err
	}
	defer os.Remove(scratch)
	if err := unix.Mount("tmpfs", scratch, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=1m,nr_inodes=1k,mode=0700"); err != nil {
		return fmt.Errorf("upper layer: %w", err)
	}
	defer unix.Unmount(scratch, unix.MNT_DETACH)
	upper, work := filepath.Join(scratch, "upper"), filepath.Join(scratch, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("upper layer: %w", err)
		}
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if fs.Flags&unix.ST_NOEXEC != 0 {
		flags |= unix.MS_NOEXEC
	}
	return unix.Mount("overlay", target, "overlay", flags, "lowerdir="+self+",upperdir="+upper+",workdir="+work)
}

// writePrivateBundle writes the pinned spec as the config.json of
// bulkhead's own bundle, where the plan hands it over.
func (c *creation) writePrivateBundle() error {
	dir := c.plan.HandOverBundle
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("private bundle: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), c.plan.HandedJSON, 0o600); err != nil {
		return fmt.Errorf("private bundle: %w", err)
	}
	if c.plan.ExecFilter != nil {
		if err := os.WriteFile(filepath.Join(dir, execFilterFile), c.plan.ExecFilter, 0o600); err != nil {
			return fmt.Errorf("private bundle: %w", err)
		}
	}
	return nil
}

// refusal is a rule's refusal found after the rules ran.
type refusal struct {
	rule, field string
	err         error
}

func (r *refusal) Error() string {
	return fmt.Sprintf("rule %s refuses %s: %v; the bundle changed after the check, or a path cannot be pinned", r.rule, r.field, r.err)
}

func (r *refusal) Unwrap() error { return r.err }
