package runtime

import (
	"io"
	"time"

	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/workspace"
)

// changes are the configuration's changes_* keys.
func (c *Config) changes() *workspace.Settings {
	return &workspace.Settings{ChangesDir: c.ChangesDir, ChangesRetention: c.ChangesRetention, ChangesMaxBytes: c.ChangesMaxBytes,
		ChangesMaxFiles: c.ChangesMaxFiles, ChangesMaxDepth: c.ChangesMaxDepth, ChangesQuota: c.ChangesQuota}
}

// DiffChanges is `bulkhead diff`: the changes of a live container's
// workspaces, read with its job paused (holdStill).
func DiffChanges(g *Globals, id, format string, w io.Writer) ([]string, error) {
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, err
	}
	return still(g, id, w, func(w io.Writer) ([]string, error) { return workspace.Diff(cfg.changes(), g.Root, id, format, w) })
}

// ExportKeptChanges is `bulkhead changes export`: the kept changes of the
// caller's --root and id, or a live container's when nothing is kept yet.
func ExportKeptChanges(g *Globals, id, format string, w io.Writer) ([]string, error) {
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, err
	}
	export := func(w io.Writer) ([]string, error) { return workspace.Export(cfg.changes(), g.Root, id, format, w) }
	if workspace.IsAsideName(id) {
		return export(w) // an earlier run's, which no container runs
	}
	return still(g, id, w, export)
}

// ListKeptChanges is `bulkhead changes list`.
func ListKeptChanges(g *Globals, format string, w io.Writer) error {
	cfg, err := g.LoadConfig()
	if err != nil {
		return err
	}
	return workspace.List(cfg.changes(), format, w)
}

// PruneChangesCmd is `bulkhead changes prune`.
func PruneChangesCmd(g *Globals, olderThan time.Duration) ([]string, error) {
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, err
	}
	return workspace.Prune(cfg.changes(), olderThan)
}

// keepChanges keeps a deleted container's workspace changes
// (workspace.Retain), reading the configuration only if there are any.
func keepChanges(g *Globals, reg *state.Registry, rec *state.Record) (*workspace.Kept, error) {
	return workspace.Retain(func() (*workspace.Settings, error) {
		cfg, err := g.LoadConfig()
		if err != nil {
			return nil, err
		}
		return cfg.changes(), nil
	}, g.Root, reg, rec)
}
