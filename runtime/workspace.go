package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/specs"
)

// workspace is one overlay workspace of a container. Its layers live in
// the container's state directory: <state>/ws is a tmpfs of the profile's
// workspace_size (the cap: ENOSPC past it) holding <n>/upper, <n>/work and
// the mount point <n>/merged, which the backend bind-mounts instead of the
// caller's source. The source is only ever the overlay's read-only lower
// layer: nothing the sandbox does reaches it.
type workspace struct {
	Destination string `json:"destination"`
	Source      string `json:"source"` // the host directory, symlinks resolved
	Dir         string `json:"dir"`    // <state>/ws/<n>
	// Named is the source as the caller's spec resolved, for messages:
	// Source becomes its pin (runtime/pins.go).
	Named string `json:"named,omitempty"`
	// Shift gives the source's owner's files to the sandbox user on the
	// lower layer (runtime/workspace_idmap.go).
	Shift *idShift `json:"shift,omitempty"`
}

func (w workspace) upper() string  { return filepath.Join(w.Dir, "upper") }
func (w workspace) work() string   { return filepath.Join(w.Dir, "work") }
func (w workspace) merged() string { return filepath.Join(w.Dir, "merged") }

const workspacesFile = "workspaces.json"

// planWorkspaces rewrites the handed spec's workspace binds to their
// overlays' merged directories (mounted later by mountWorkspaces, once the
// state directory exists). Only enforce mode and workspace_mode overlay
// get overlays; the workspace rule already decided the other modes.
func (c *creation) planWorkspaces() error {
	p := &c.sel.Profile
	if p.Mode != specs.Enforce || p.WorkspaceModeOf() != specs.WorkspaceOverlay {
		return nil
	}
	for i := range c.handed.Mounts {
		m := &c.handed.Mounts[i]
		if !p.IsWorkspace(*m) {
			continue
		}
		real, err := filepath.EvalSymlinks(c.bundlePath(m.Source))
		if err != nil {
			return fmt.Errorf("workspace %s: source %s: %w", m.Destination, m.Source, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return fmt.Errorf("workspace %s: %w", m.Destination, err)
		}
		if !fi.IsDir() {
			logrus.Warnf("bulkhead: workspace %s: source %s is not a directory; it stays a read-only bind", m.Destination, m.Source)
			continue
		}
		// overlayfs splits its options at ',' and lowerdir at ':'; such a
		// source cannot be named safely.
		if strings.ContainsAny(real, ",:\\\n") {
			return fmt.Errorf("workspace %s: source %q holds ',', ':' or '\\', which overlayfs options cannot carry; refused", m.Destination, real)
		}
		w := workspace{Destination: m.Destination, Source: real, Named: real,
			Dir: filepath.Join(c.reg.Dir(c.audit.ID), "ws", strconv.Itoa(len(c.ws)))}
		if u := c.handed.Process; u != nil {
			w.Shift = &idShift{UIDTo: u.User.UID, GIDTo: u.User.GID}
		}
		c.ws = append(c.ws, w)
		m.Source = w.merged()
		m.Type = "bind"
		m.Options = append(withoutOpt(m.Options, "ro", "rro", "rw", "rbind", "bind", "exec", "rexec", "noexec"),
			"rbind", "rw", "nosuid", "nodev")
		if !p.ExecutesWrites() {
			// The layer is written by the sandbox: without the job
			// profile's grant, what it writes there must not run, as in
			// /tmp.
			m.Options = append(m.Options, "noexec")
		}
		if err := specs.CheckWritableNoexec(p, *m); err != nil {
			return fmt.Errorf("workspace %s: %w", m.Destination, err)
		}
	}
	return nil
}

func withoutOpt(opts []string, drop ...string) []string {
	var out []string
	for _, o := range opts {
		keep := true
		for _, d := range drop {
			if o == d {
				keep = false
			}
		}
		if keep {
			out = append(out, o)
		}
	}
	return out
}

// mountWorkspaces mounts the tmpfs and the overlays planned by
// planWorkspaces. On error the caller's undo unmounts whatever exists
// (Registry.Remove unmounts everything under the state directory).
func (c *creation) mountWorkspaces() error {
	if len(c.ws) == 0 {
		return nil
	}
	size, err := c.sel.Profile.WorkspaceBytes()
	if err != nil {
		return err
	}
	base := filepath.Join(c.reg.Dir(c.rec.ID), "ws")
	if err := os.Mkdir(base, 0o700); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := unix.Mount("bulkhead-ws", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return fmt.Errorf("workspace tmpfs %s (size %d): %w", base, size, err)
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if !c.sel.Profile.ExecutesWrites() {
		flags |= unix.MS_NOEXEC
	}
	for i := range c.ws {
		if err := mountOverlay(&c.ws[i], &c.sel.Profile, flags); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(c.ws, "", "  ")
	if err != nil {
		return err
	}
	return specs.WriteAtomic(filepath.Join(c.reg.Dir(c.rec.ID), workspacesFile), data, 0o600)
}

// mountOverlay mounts a workspace's overlay with flags: nosuid and nodev
// always, noexec unless the profile lets the job run what it writes. The
// profile decides whose checkout may be id-mapped.
func mountOverlay(w *workspace, p *specs.Profile, flags uintptr) error {
	for _, d := range []string{w.Dir, w.upper(), w.work(), w.merged()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(w.Source, &st); err != nil {
		return fmt.Errorf("workspace source %s: %w", w.Source, err)
	}
	uid, gid := st.Uid, st.Gid
	if w.Shift != nil {
		w.Shift.UIDFrom, w.Shift.GIDFrom = st.Uid, st.Gid
		uid, gid = w.Shift.UIDTo, w.Shift.GIDTo
		if !w.Shift.identity() {
			if err := ownersAllowed(*w.Shift, st.Mode, p); err != nil {
				return fmt.Errorf("workspace %s: source %s: %w", w.Destination, w.Named, err)
			}
			if err := mountIDMappedLower(w.Source, w.lowerOf(), *w.Shift); err != nil {
				return fmt.Errorf("workspace %s (source owned by %d:%d, sandbox user %d:%d): %w",
					w.Destination, st.Uid, st.Gid, uid, gid, err)
			}
		}
	}
	// The merged root shows the upper root's owner and mode: the source's
	// mode, and the owner the sandbox sees on the lower layer.
	if err := os.Lchown(w.upper(), int(uid), int(gid)); err != nil {
		return err
	}
	if err := os.Chmod(w.upper(), os.FileMode(st.Mode&0o777)|modeBits(st.Mode)); err != nil {
		return err
	}
	// redirect_dir and metacopy off: the upper layer then holds whole
	// files and plain whiteouts only, which is what diff and export read.
	base := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", w.lowerOf(), w.upper(), w.work())
	var err error
	for _, extra := range []string{",redirect_dir=off,metacopy=off,index=off", ""} {
		err = unix.Mount("bulkhead-ws", w.merged(), "overlay", flags, base+extra)
		if err == nil {
			return nil
		}
	}
	if w.lowerOf() != w.Source {
		return fmt.Errorf("workspace %s: mount overlay on %s over an id-mapped lower layer: %w (%v)", w.Destination, w.merged(), err, errNoIDMap)
	}
	return fmt.Errorf("workspace %s: mount overlay on %s: %w", w.Destination, w.merged(), err)
}

func modeBits(m uint32) os.FileMode {
	var fm os.FileMode
	if m&unix.S_ISVTX != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

// loadWorkspaces reads the workspaces of a container's state directory;
// none is not an error.
func loadWorkspaces(stateDir string) ([]workspace, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, workspacesFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ws []workspace
	return ws, json.Unmarshal(data, &ws)
}
