// Package workspace owns copy-on-write workspaces: planning the overlay
// that replaces a bind of a workspace destination, mounting it on a
// size-capped tmpfs in the container's state directory, reading what the
// sandbox changed (diff), exporting it as json, a patch or a tar without
// following anything the sandbox planted, and keeping it after delete in
// changes_dir within the configured limits.
//
// It imports runtime/state (state directories) and nothing of runtime.
package workspace
