package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
)

// workspace is one overlay workspace of a container. Its layers live in
// the container's state directory: <state>/ws is a tmpfs of the profile's
// workspace_size (the cap: ENOSPC past it) holding <n>/upper, <n>/work and
// the mount point <n>/merged, which the backend bind-mounts instead of the
// caller's source. The source is only ever the overlay's read-only lower
// layer: nothing the sandbox does reaches it.
type Workspace struct {
	Destination string `json:"destination"`
	Source      string `json:"source"` // the host directory, symlinks resolved
	Dir         string `json:"dir"`    // <state>/ws/<n>
	// Named is the source as the caller's spec resolved, for messages and
	// for judging a tar against the checkout as it is when the tar is
	// made: Source becomes its pin (runtime/pins.go).
	Named string `json:"named,omitempty"`
	// Shift gives the source's owner's files to the sandbox user on the
	// lower layer (workspace_idmap.go).
	Shift *idShift `json:"shift,omitempty"`
}

func (w Workspace) Upper() string  { return filepath.Join(w.Dir, "upper") }
func (w Workspace) Work() string   { return filepath.Join(w.Dir, "work") }
func (w Workspace) Merged() string { return filepath.Join(w.Dir, "merged") }

const workspacesFile = "workspaces.json"

// Plan rewrites the handed spec's workspace binds to their
// overlays' merged directories below stateDir (mounted later by
// Mount, once the state directory exists) and returns the
// overlays with a decision per rewritten mount. Only enforce mode and
// workspace_mode overlay get overlays; the workspace rule already decided
// the other modes. It only reads the host (the sources).
//
// at reaches a path the spec names relative to the bundle (through the
// bundle opened once, at create).
func Plan(p *specs.Profile, handed *rspec.Spec, at func(string) string, stateDir string) ([]Workspace, []specs.Decision, error) {
	if p.Mode != specs.Enforce || p.WorkspaceModeOf() != specs.WorkspaceOverlay {
		return nil, nil, nil
	}
	var ws []Workspace
	var ds []specs.Decision
	for i := range handed.Mounts {
		m := &handed.Mounts[i]
		if !p.IsWorkspace(*m) {
			continue
		}
		field := "mounts[" + m.Destination + "]"
		refuse := func(why string) error {
			ds = append(ds, specs.Decision{Rule: "workspace", Field: field, Action: specs.Refused, Before: m.Source,
				Layer: specs.LayerNone, Why: why})
			return &specs.RefusalError{Profile: p.Name, Decisions: ds}
		}
		real, err := filepath.EvalSymlinks(at(m.Source))
		if err != nil {
			return nil, ds, fmt.Errorf("workspace %s: source %s: %w", m.Destination, m.Source, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, ds, fmt.Errorf("workspace %s: %w", m.Destination, err)
		}
		if !fi.IsDir() {
			logrus.Warnf("bulkhead: workspace %s: source %s is not a directory; it stays a read-only bind", m.Destination, m.Source)
			ds = append(ds, specs.Decision{Rule: "workspace", Field: field, Action: specs.Kept, Before: m.Source, After: m.Source,
				Layer: specs.LayerMountFlags, Why: "the source is not a directory, which an overlay cannot take: it stays a read-only bind"})
			continue
		}
		// overlayfs splits its options at ',' and lowerdir at ':'; such a
		// source cannot be named safely.
		if strings.ContainsAny(real, ",:\\\n") {
			return nil, ds, refuse(fmt.Sprintf("its real path %q holds ',', ':' or '\\', which overlayfs options cannot carry; bind it from a path without them", real))
		}
		w := Workspace{Destination: m.Destination, Source: real, Named: real, Dir: filepath.Join(stateDir, "ws", strconv.Itoa(len(ws)))}
		if u := handed.Process; u != nil {
			w.Shift = &idShift{UIDTo: u.User.UID, GIDTo: u.User.GID}
			// The owners are judged here, so that check refuses what
			// create will, and again on the pinned source at Mount.
			var st unix.Stat_t
			if err := unix.Stat(real, &st); err != nil {
				return nil, ds, fmt.Errorf("workspace source %s: %w", real, err)
			}
			shift := *w.Shift
			shift.UIDFrom, shift.GIDFrom = st.Uid, st.Gid
			if !shift.identity() {
				if err := ownersAllowed(shift, st.Mode, p); err != nil {
					return nil, ds, refuse(err.Error())
				}
			}
		}
		if why := JudgeSource(real, real); why != "" {
			return nil, ds, refuse(why)
		}
		ws = append(ws, w)
		before := m.Source + " " + strings.Join(m.Options, ",")
		m.Source = w.Merged()
		m.Type = "bind"
		m.Options = slices.DeleteFunc(slices.Clone(m.Options), func(o string) bool {
			return slices.Contains([]string{"ro", "rro", "rw", "rbind", "bind", "exec", "rexec", "noexec"}, o)
		})
		m.Options = append(m.Options, "rbind", "rw", "nosuid", "nodev")
		if !p.ExecutesWrites() {
			// The layer is written by the sandbox: without the job
			// profile's grant, what it writes there must not run, as in
			// /tmp.
			m.Options = append(m.Options, "noexec")
		}
		if err := specs.CheckWritableNoexec(p, *m); err != nil {
			return nil, ds, fmt.Errorf("workspace %s: %w", m.Destination, err)
		}
		ds = append(ds, specs.Decision{Rule: "workspace", Field: field, Action: specs.Tightened, Before: before,
			After: m.Source + " " + strings.Join(m.Options, ","), Layer: specs.LayerWorkspace,
			Why: "the overlay's merged directory (lower " + real + ", read-only) is bound instead of the source"})
	}
	return ws, ds, nil
}

// Mount mounts, in stateDir, the tmpfs of p's workspace_size and the overlays
// planned by Plan, and records them for diff, export and delete. On error
// the caller's undo unmounts whatever exists (state.Registry.Remove
// unmounts everything under the state directory).
func Mount(ws []Workspace, p *specs.Profile, stateDir string) error {
	if len(ws) == 0 {
		return nil
	}
	size, err := p.WorkspaceBytes()
	if err != nil {
		return err
	}
	base := filepath.Join(stateDir, "ws")
	if err := os.Mkdir(base, 0o700); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	// Where the mount holding the state root is shared, the tmpfs, the
	// overlays and the id-mapped lower layers would be copied to every
	// peer and slave of it (a container with an rslave bind above the
	// state root among them), the job's upper layer writable there: on a
	// private mount of the directory they reach none.
	if err := state.PrivateMountPoint(base); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := unix.Mount("bulkhead-ws", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return fmt.Errorf("workspace tmpfs %s (size %d): %w", base, size, err)
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if !p.ExecutesWrites() {
		flags |= unix.MS_NOEXEC
	}
	for i := range ws {
		if err := mountOverlay(&ws[i], p, flags); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(ws, "", "  ")
	if err != nil {
		return err
	}
	return specs.WriteAtomic(filepath.Join(stateDir, workspacesFile), data, 0o600)
}

// mountOverlay mounts a workspace's overlay with flags: nosuid and nodev
// always, noexec unless the profile lets the job run what it writes. The
// profile decides whose checkout may be id-mapped.
func mountOverlay(w *Workspace, p *specs.Profile, flags uintptr) error {
	for _, d := range []string{w.Dir, w.Upper(), w.Work(), w.Merged()} {
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
	if err := os.Lchown(w.Upper(), int(uid), int(gid)); err != nil {
		return err
	}
	if err := os.Chmod(w.Upper(), os.FileMode(st.Mode&0o777)|modeBits(st.Mode)); err != nil {
		return err
	}
	// redirect_dir and metacopy off: the upper layer then holds whole
	// files and plain whiteouts only, which is what diff and export read.
	base := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", w.lowerOf(), w.Upper(), w.Work())
	var err error
	for _, extra := range []string{",redirect_dir=off,metacopy=off,index=off", ""} {
		err = unix.Mount("bulkhead-ws", w.Merged(), "overlay", flags, base+extra)
		if err == nil {
			return nil
		}
	}
	if w.lowerOf() != w.Source {
		return fmt.Errorf("workspace %s: mount overlay on %s over an id-mapped lower layer: %w (%v)", w.Destination, w.Merged(), err, errNoIDMap)
	}
	return fmt.Errorf("workspace %s: mount overlay on %s: %w", w.Destination, w.Merged(), err)
}

func modeBits(m uint32) os.FileMode {
	var fm os.FileMode
	if m&unix.S_ISVTX != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

// Load reads the workspaces of a container's state directory;
// none is not an error.
func Load(stateDir string) ([]Workspace, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, workspacesFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ws []Workspace
	return ws, json.Unmarshal(data, &ws)
}
