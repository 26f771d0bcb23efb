package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// Retained changes outlive the container (docker run --rm deletes it as
// soon as it exits) in <changes_dir>/<id>/: a copy of each upper layer
// (whiteouts and opaque markers kept), the patch and json computed at
// delete against the source as it was then, and meta.json. They are
// removed by `bulkhead changes prune` once changes_retention has passed.
type retained struct {
	ID         string     `json:"id"`
	Root       string     `json:"root"`
	Profile    string     `json:"profile,omitempty"`
	Bundle     string     `json:"bundle,omitempty"`
	Deleted    time.Time  `json:"deleted"`
	Expires    time.Time  `json:"expires"`
	Workspaces []layerSet `json:"workspaces"`
	Changes    int        `json:"changes"`
	Rejected   []string   `json:"rejected,omitempty"`
	Dir        string     `json:"dir"`
	layers     []layerSet // with Upper set, for tar export
}

func changesDir(cfg *Config) string {
	if cfg.ChangesDir == "" {
		return "/var/lib/bulkhead/changes"
	}
	return cfg.ChangesDir
}

func retention(cfg *Config) (time.Duration, error) {
	if cfg.ChangesRetention == "" {
		return 24 * time.Hour, nil
	}
	if cfg.ChangesRetention == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(cfg.ChangesRetention)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("changes_retention %q: want a duration such as 24h", cfg.ChangesRetention)
	}
	return d, nil
}

// liveSets are the layer sets of a container's mounted workspaces.
func liveSets(ws []workspace) []layerSet {
	var sets []layerSet
	for _, w := range ws {
		s := layerSet{Destination: w.Destination, Source: w.Source, Upper: w.upper(), Lower: w.Source}
		if len(ws) > 1 {
			s.Prefix = strings.Trim(w.Destination, "/") + "/"
		}
		sets = append(sets, s)
	}
	return sets
}

// Diff writes the changes of a live container's workspaces.
func Diff(g *Globals, id, format string, w io.Writer) ([]string, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	reg, err := OpenRegistry(g.Root)
	if err != nil {
		return nil, err
	}
	if _, err := reg.Get(id); err != nil {
		return nil, fmt.Errorf("container %s: %w", id, err)
	}
	ws, err := loadWorkspaces(reg.Dir(id))
	if err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, fmt.Errorf("container %s has no overlay workspace", id)
	}
	return exportChanges(w, format, liveSets(ws))
}

// retainChanges keeps a deleted container's workspace changes and says
// where; nil and no error when there are none or retention is off.
func retainChanges(g *Globals, reg *Registry, rec *Record) (*retained, error) {
	ws, err := loadWorkspaces(reg.Dir(rec.ID))
	if err != nil {
		return nil, fmt.Errorf("workspaces of %s: %w", rec.ID, err)
	}
	if len(ws) == 0 {
		return nil, nil
	}
	cfg, err := LoadConfig(g.Config, g.explicit)
	if err != nil {
		return nil, err
	}
	keep, err := retention(cfg)
	if err != nil || keep == 0 {
		return nil, err
	}
	r, err := saveChanges(cfg, g.Root, rec, ws, keep)
	if err != nil {
		return nil, err
	}
	if _, err := PruneChanges(cfg, -1); err != nil {
		logrus.Warnf("bulkhead: prune changes: %v", err)
	}
	return r, nil
}

func saveChanges(cfg *Config, root string, rec *Record, ws []workspace, keep time.Duration) (*retained, error) {
	dir := filepath.Join(changesDir(cfg), rec.ID)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil { // an earlier container of this id
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	now := nowUTC()
	r := &retained{ID: rec.ID, Root: root, Profile: rec.Profile, Bundle: rec.Bundle, Deleted: now, Expires: now.Add(keep), Dir: dir}
	sets := liveSets(ws)
	var patch, js bytes.Buffer
	rejected, err := exportChanges(&patch, "patch", sets)
	if err != nil {
		return nil, err
	}
	if _, err := exportChanges(&js, "json", sets); err != nil {
		return nil, err
	}
	var rep ChangeReport
	_ = json.Unmarshal(js.Bytes(), &rep)
	for _, w := range rep.Workspaces {
		r.Changes += len(w.Changes)
	}
	r.Rejected = rejected
	for i, s := range sets {
		dst := filepath.Join(dir, strconv.Itoa(i), "upper")
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return nil, err
		}
		if err := copyLayer(s.Upper, dst); err != nil {
			return nil, fmt.Errorf("copy upper layer of %s: %w", s.Destination, err)
		}
		r.Workspaces = append(r.Workspaces, layerSet{Destination: s.Destination, Source: s.Source, Prefix: s.Prefix})
	}
	for name, data := range map[string][]byte{"changes.patch": patch.Bytes(), "changes.json": js.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	meta, _ := json.MarshalIndent(r, "", "  ")
	return r, os.WriteFile(filepath.Join(dir, "meta.json"), meta, 0o600)
}

// copyLayer copies an upper layer beneath src to dst: files, dirs,
// symlinks (as links, never followed), whiteouts and opaque markers.
// Device nodes, fifos, sockets and setuid/setgid files are left out.
func copyLayer(src, dst string) error {
	up, err := openLayer(src)
	if err != nil {
		return err
	}
	defer up.Close()
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	var walk func(rel string) error
	walk = func(rel string) error {
		names, err := up.names(rel)
		if err != nil {
			return err
		}
		for _, n := range names {
			p := join(rel, n)
			st, err := up.lstat(p)
			if err != nil {
				return err
			}
			out := filepath.Join(dst, filepath.FromSlash(p))
			switch {
			case isWhiteout(st):
				if err := unix.Mknod(out, unix.S_IFCHR|0o600, 0); err != nil {
					return err
				}
			case st.Mode&unix.S_IFMT == unix.S_IFDIR:
				if err := os.Mkdir(out, os.FileMode(st.Mode&0o777)); err != nil {
					return err
				}
				if up.opaque(p) {
					if err := unix.Setxattr(out, "trusted.overlay.opaque", []byte("y"), 0); err != nil {
						return err
					}
				}
				if err := walk(p); err != nil {
					return err
				}
			case st.Mode&unix.S_IFMT == unix.S_IFLNK:
				t, err := up.readlink(p)
				if err != nil {
					return err
				}
				if err := os.Symlink(t, out); err != nil {
					return err
				}
			case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&(unix.S_ISUID|unix.S_ISGID) == 0:
				in, err := up.open(p, unix.O_RDONLY)
				if err != nil {
					return err
				}
				o, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(st.Mode&0o777))
				if err == nil {
					_, err = io.Copy(o, in)
					if cerr := o.Close(); err == nil {
						err = cerr
					}
				}
				in.Close()
				if err != nil {
					return err
				}
				_ = os.Chmod(out, os.FileMode(st.Mode&0o777))
			}
		}
		return nil
	}
	return walk("")
}

func loadRetained(cfg *Config, id string) (*retained, error) {
	dir := filepath.Join(changesDir(cfg), id)
	data, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return nil, err
	}
	var r retained
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	r.Dir = dir
	for i, s := range r.Workspaces {
		s.Upper = filepath.Join(dir, strconv.Itoa(i), "upper")
		r.layers = append(r.layers, s)
	}
	return &r, nil
}

// ExportChanges writes the kept changes of id, or a live container's
// changes when nothing is kept yet.
func ExportChanges(g *Globals, id, format string, w io.Writer) ([]string, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	cfg, err := LoadConfig(g.Config, g.explicit)
	if err != nil {
		return nil, err
	}
	r, err := loadRetained(cfg, id)
	if errors.Is(err, os.ErrNotExist) {
		return Diff(g, id, format, w)
	}
	if err != nil {
		return nil, err
	}
	switch format {
	case "patch", "json":
		f, err := os.Open(filepath.Join(r.Dir, "changes."+format))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return r.Rejected, err
	case "tar":
		tw := newTar(w)
		for _, s := range r.layers {
			if err := writeLayerTar(tw, s); err != nil {
				return nil, err
			}
		}
		return r.Rejected, tw.Close()
	}
	return nil, fmt.Errorf("format %q: want patch, tar or json", format)
}

// ListChanges writes the kept changes as a table or json.
func ListChanges(g *Globals, format string, w io.Writer) error {
	cfg, err := LoadConfig(g.Config, g.explicit)
	if err != nil {
		return err
	}
	all, err := allRetained(cfg)
	if err != nil {
		return err
	}
	if format == "json" {
		if all == nil {
			all = []*retained{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDELETED\tEXPIRES\tCHANGES\tREJECTED\tDIR")
	for _, r := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.ID, r.Deleted.Format(time.RFC3339), r.Expires.Format(time.RFC3339), r.Changes, len(r.Rejected), r.Dir)
	}
	return tw.Flush()
}

func allRetained(cfg *Config) ([]*retained, error) {
	entries, err := os.ReadDir(changesDir(cfg))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var all []*retained
	for _, e := range entries {
		if r, err := loadRetained(cfg, e.Name()); err == nil {
			all = append(all, r)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Deleted.Before(all[j].Deleted) })
	return all, nil
}

// PruneChanges removes kept changes past their expiry, or deleted more
// than olderThan ago when olderThan >= 0, and returns their ids.
func PruneChanges(cfg *Config, olderThan time.Duration) ([]string, error) {
	all, err := allRetained(cfg)
	if err != nil {
		return nil, err
	}
	now := nowUTC()
	var gone []string
	var errs []error
	for _, r := range all {
		if now.Before(r.Expires) && (olderThan < 0 || now.Sub(r.Deleted) < olderThan) {
			continue
		}
		if err := removeTree(r.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		gone = append(gone, r.ID)
	}
	return gone, errors.Join(errs...)
}

// PruneChangesCmd is `bulkhead changes prune`.
func PruneChangesCmd(g *Globals, olderThan time.Duration) ([]string, error) {
	cfg, err := LoadConfig(g.Config, g.explicit)
	if err != nil {
		return nil, err
	}
	return PruneChanges(cfg, olderThan)
}
