package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

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

// pinHostPaths pins the handed spec's root and bind sources and the
// workspaces' lower directories, rewriting them to their pins. It runs
// once the state directory exists, before the workspaces are mounted.
func (c *creation) pinHostPaths() error {
	dir := filepath.Join(c.reg.Dir(c.rec.ID), pinsDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	n := 0
	pin := func(src string, judge func(real string) string) (string, error) {
		target := filepath.Join(dir, strconv.Itoa(n))
		n++
		return pinPath(src, target, judge)
	}
	s := c.handed
	if s.Root != nil {
		p, err := pin(c.bundlePath(s.Root.Path), func(real string) string {
			bundleReal, err := c.bundleDir.real()
			if err != nil {
				return err.Error()
			}
			return specs.JudgeRoot(c.ctx, real, bundleReal)
		})
		if err != nil {
			return &refusal{rule: "root", field: "root.path", err: err}
		}
		s.Root.Path = p
	}
	merged := map[string]bool{}
	for _, w := range c.ws {
		merged[w.merged()] = true
	}
	for i := range s.Mounts {
		m := &s.Mounts[i]
		if !specs.IsBind(*m) || merged[m.Source] {
			continue
		}
		p, err := pin(c.bundlePath(m.Source), func(real string) string { return specs.JudgeBindSource(c.ctx, s.Annotations, real) })
		if err != nil {
			return &refusal{rule: "host_mounts", field: "mounts[" + m.Destination + "]", err: err}
		}
		m.Source = p
	}
	for i := range c.ws {
		w := &c.ws[i]
		p, err := pin(w.Source, func(real string) string { return specs.JudgeBindSource(c.ctx, s.Annotations, real) })
		if err != nil {
			return &refusal{rule: "host_mounts", field: "mounts[" + w.Destination + "]", err: err}
		}
		w.Source = p
	}
	return nil
}

// pinPath opens src as the backend would (following symlinks), judges
// what was opened by its real path, and bind-mounts that very file or
// directory, through its descriptor, onto target. No path is resolved
// again after the judgement.
func pinPath(src, target string, judge func(real string) string) (string, error) {
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
	if why := judge(real); why != "" {
		return "", fmt.Errorf("%s is now %s: %s", src, real, why)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("%s: %w", src, err)
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
	if err := unix.Mount(self, target, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("pin %s: %w", real, err)
	}
	return target, nil
}

// writePrivateBundle writes the pinned spec as the config.json of
// bulkhead's own bundle and returns the bundle's path.
func (c *creation) writePrivateBundle() (string, error) {
	dir := filepath.Join(c.reg.Dir(c.rec.ID), privateBundleDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("private bundle: %w", err)
	}
	data, err := specs.Marshal(c.handed)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		return "", fmt.Errorf("private bundle: %w", err)
	}
	return dir, nil
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
