package runtime

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"
)

// layerSet is one workspace's pair of layers, as export reads them.
type layerSet struct {
	Destination string `json:"destination"`
	Source      string `json:"source"`
	Upper       string `json:"-"`
	Lower       string `json:"-"`
	// Prefix goes before every path: "" for a single workspace (so the
	// patch applies in a checkout of the source), the destination's name
	// when a container has several.
	Prefix string `json:"-"`
}

// ChangeReport is the json form of export and diff.
type ChangeReport struct {
	Workspaces []workspaceChanges `json:"workspaces"`
	// Rejected lists what export leaves out and why.
	Rejected []string `json:"rejected,omitempty"`
}

type workspaceChanges struct {
	layerSet
	Changes []Change `json:"changes"`
}

// ExportChanges writes the changes of every layer set in format patch,
// tar or json and returns what it left out. It reads each upper layer
// only beneath its root: no symlink is followed, no host path the sandbox
// named is opened, device nodes and setuid/setgid files never leave.
func exportChanges(w io.Writer, format string, sets []layerSet) ([]string, error) {
	switch format {
	case "patch", "json", "tar":
	default:
		return nil, fmt.Errorf("format %q: want patch, tar or json", format)
	}
	var report ChangeReport
	var tw *tar.Writer
	if format == "tar" {
		tw = newTar(w)
	}
	for _, s := range sets {
		changes, err := scanChanges(s.Upper, s.Lower)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: %w", s.Destination, err)
		}
		for i := range changes {
			if changes[i].Rejected != "" {
				report.Rejected = append(report.Rejected, s.Prefix+changes[i].Path+": "+changes[i].Rejected)
			}
		}
		switch format {
		case "json":
			report.Workspaces = append(report.Workspaces, workspaceChanges{layerSet: s, Changes: changes})
		case "patch":
			up, err := openLayer(s.Upper)
			if err != nil {
				return nil, err
			}
			low, err := openLayer(s.Lower)
			if err != nil {
				up.Close()
				return nil, err
			}
			skipped, err := writePatch(w, changes, patchSource{up: up, low: low}, s.Prefix)
			up.Close()
			low.Close()
			if err != nil {
				return nil, err
			}
			for _, sk := range skipped {
				if !contains(report.Rejected, sk) {
					report.Rejected = append(report.Rejected, sk)
				}
			}
		case "tar":
			if err := writeLayerTar(tw, s); err != nil {
				return nil, err
			}
		}
	}
	switch format {
	case "json":
		if report.Workspaces == nil {
			report.Workspaces = []workspaceChanges{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return report.Rejected, enc.Encode(report)
	case "tar":
		return report.Rejected, tw.Close()
	}
	return report.Rejected, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeLayerTar writes the upper layer in the OCI layer format: a deleted
// path is an empty file .wh.<name>, an opaque directory holds .wh..wh..opq.
func writeLayerTar(tw *tar.Writer, s layerSet) error {
	up, err := openLayer(s.Upper)
	if err != nil {
		return err
	}
	defer up.Close()
	var walk func(rel string) error
	walk = func(rel string) error {
		names, err := up.names(rel)
		if err != nil {
			return err
		}
		if rel != "" && up.opaque(rel) {
			if err := tw.WriteHeader(&tar.Header{Name: s.Prefix + rel + "/.wh..wh..opq", Typeflag: tar.TypeReg, Mode: 0o600, ModTime: time.Unix(0, 0)}); err != nil {
				return err
			}
		}
		for _, n := range names {
			p := join(rel, n)
			st, err := up.lstat(p)
			if err != nil {
				return err
			}
			name := s.Prefix + p
			hdr := &tar.Header{Name: name, Mode: int64(st.Mode & 0o777), Uid: int(st.Uid), Gid: int(st.Gid),
				ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec)}
			switch {
			case isWhiteout(st):
				hdr.Name = s.Prefix + join(rel, ".wh."+n)
				hdr.Typeflag, hdr.Mode = tar.TypeReg, 0o600
				if err := tw.WriteHeader(hdr); err != nil {
					return err
				}
			case st.Mode&unix.S_IFMT == unix.S_IFDIR:
				hdr.Name += "/"
				hdr.Typeflag = tar.TypeDir
				if err := tw.WriteHeader(hdr); err != nil {
					return err
				}
				if err := walk(p); err != nil {
					return err
				}
			case st.Mode&unix.S_IFMT == unix.S_IFLNK:
				t, err := up.readlink(p)
				if err != nil {
					return err
				}
				hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, t
				if err := tw.WriteHeader(hdr); err != nil {
					return err
				}
			case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&(unix.S_ISUID|unix.S_ISGID) == 0:
				f, err := up.open(p, unix.O_RDONLY)
				if err != nil {
					return err
				}
				fi, err := f.Stat()
				if err != nil || !fi.Mode().IsRegular() {
					f.Close()
					return fmt.Errorf("%s: changed while exporting", p)
				}
				hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
				if err := tw.WriteHeader(hdr); err != nil {
					f.Close()
					return err
				}
				_, err = io.CopyN(tw, f, fi.Size())
				f.Close()
				if err != nil {
					return err
				}
			default:
				// devices other than whiteouts, fifos, sockets, setuid or
				// setgid files: reported by scanChanges, never written
			}
		}
		return nil
	}
	return walk("")
}

func newTar(w io.Writer) *tar.Writer { return tar.NewWriter(w) }
