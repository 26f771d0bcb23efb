package specs

import (
	"path/filepath"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Workspace modes of a profile.
const (
	WorkspaceOverlay  = "overlay"  // copy-on-write layer over the read-only source, changes exported
	WorkspaceReadonly = "readonly" // the plain read-only bind of host_mounts
	WorkspaceDirect   = "direct"   // a real read-write bind: trusted profiles only
)

// LayerWorkspace is the kernel mechanism of an overlay workspace: writes
// land in an overlayfs upper layer on a size-capped tmpfs (ENOSPC past it),
// never in the host source.
const LayerWorkspace Layer = "overlay upper on size-capped tmpfs"

// WorkspaceModeOf is the profile's workspace mode, overlay when unset.
func (p *Profile) WorkspaceModeOf() string {
	if p.WorkspaceMode == "" {
		return WorkspaceOverlay
	}
	return p.WorkspaceMode
}

// WorkspaceBytes is the cap of one container's workspace layers in bytes.
func (p *Profile) WorkspaceBytes() (int64, error) {
	n, err := parseSize("workspace_size", p.WorkspaceSize)
	if err == nil && n == 0 {
		n = 256 << 20
	}
	return n, err
}

// IsWorkspace tells whether a mount is a bind onto one of the profile's
// workspace destinations (compared as clean absolute paths).
func (p *Profile) IsWorkspace(m rspec.Mount) bool {
	if !isBind(m) {
		return false
	}
	for _, w := range p.Workspaces {
		if filepath.Clean(w) == filepath.Clean(m.Destination) {
			return true
		}
	}
	return false
}

// ruleWorkspace runs after host_mounts, which already refused dangerous
// sources and made every bind ro,nosuid,nodev. For a workspace bind it
// decides what the runtime does with it: in overlay mode the runtime swaps
// the source for an overlay it mounts on the host (see runtime/workspace);
// readonly keeps the read-only bind; direct makes it read-write, and only a
// trusted profile may ask for that.
func ruleWorkspace(c *Context, s *rspec.Spec) []Decision {
	var ds []Decision
	p := c.Profile
	seen := map[string]bool{}
	for i := range s.Mounts {
		m := &s.Mounts[i]
		if !p.IsWorkspace(*m) {
			continue
		}
		field := "mounts[" + m.Destination + "]"
		// Two binds at one workspace (/workspace and /workspace/.) stack
		// two layers whose kept changes would name one place twice.
		dst := filepath.Clean(m.Destination)
		if seen[dst] {
			ds = append(ds, Decision{Rule: "workspace", Field: field, Action: Refused, Before: m.Source, Layer: LayerNone,
				Why: "a second bind at workspace " + dst + ": bind each workspace once"})
			continue
		}
		seen[dst] = true
		switch p.WorkspaceModeOf() {
		case WorkspaceReadonly:
			ds = append(ds, Decision{Rule: "workspace", Field: field, Action: Kept,
				Before: m.Source, After: m.Source + " " + fmtList(m.Options), Layer: LayerMountFlags,
				Why: "workspace_mode readonly: the workspace is the read-only bind (EROFS)"})
		case WorkspaceDirect:
			if !p.Trusted {
				ds = append(ds, Decision{Rule: "workspace", Field: field, Action: Refused,
					Before: m.Source, Layer: LayerNone,
					Why: "workspace_mode direct writes to the host source and is allowed only for profiles with trusted = true; use overlay"})
				continue
			}
			opts := append(withoutOpts(m.Options, "ro", "rro", "rw"), "rw")
			if !p.ExecutesWrites() {
				opts = append(withoutOpts(opts, "exec", "rexec", "noexec"), "noexec")
			}
			ds = append(ds, Decision{Rule: "workspace", Field: field, Action: Kept,
				Before: m.Source + " " + fmtList(m.Options), After: m.Source + " " + fmtList(opts), Layer: LayerMountFlags,
				Why: "workspace_mode direct on trusted profile " + p.Name + ": the sandbox writes to the host source"})
			m.Options = opts
		default:
			ds = append(ds, Decision{Rule: "workspace", Field: field, Action: Tightened,
				Before: m.Source, After: "overlay lower=" + m.Source + " (read-only), upper in bulkhead's state, cap " + p.WorkspaceSize,
				Layer: LayerWorkspace,
				Why:   "workspace_mode overlay: writable for the sandbox, never written back to the host; changes are kept for review (bulkhead diff / changes export)"})
		}
	}
	return ds
}
