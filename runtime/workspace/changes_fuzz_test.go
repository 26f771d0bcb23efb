package workspace

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/escape"
)

// fuzzLayer builds an upper layer from data: each entry is a kind byte
// (low 3 bits: file, dir, symlink, whiteout, fifo, hard link, setuid
// file, file with CR; bit 7: inside the last directory made), a length
// byte and the name. It returns the whiteouts it made.
func fuzzLayer(t *testing.T, dir string, data []byte) map[string]bool {
	whiteouts := map[string]bool{}
	var lastDir, firstFile string
	for len(data) >= 2 {
		kind, n := data[0], int(data[1])
		data = data[2:]
		n = min(n, len(data))
		name := strings.Map(func(r rune) rune {
			if r == '/' || r == 0 {
				return -1
			}
			return r
		}, string(data[:n]))
		data = data[n:]
		if len(name) > 200 {
			name = name[:200]
		}
		if name == "" || name == "." || name == ".." {
			continue
		}
		rel := name
		if kind&0x80 != 0 && lastDir != "" {
			rel = lastDir + "/" + name
		}
		p := filepath.Join(dir, rel)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		var err error
		switch kind & 7 {
		case 0:
			err = os.WriteFile(p, data[:min(len(data), 64)], 0o644)
			if firstFile == "" {
				firstFile = p
			}
		case 1:
			if err = os.Mkdir(p, 0o755); err == nil {
				lastDir = rel
			}
		case 2:
			err = os.Symlink(name, p)
		case 3:
			if os.Geteuid() != 0 {
				continue
			}
			if err = unix.Mknod(p, unix.S_IFCHR, 0); err == nil {
				whiteouts[rel] = true
			}
		case 4:
			err = unix.Mkfifo(p, 0o644)
		case 5:
			if firstFile == "" {
				continue
			}
			err = os.Link(firstFile, p)
		case 6:
			err = os.WriteFile(p, []byte("s\n"), 0o644)
			if err == nil {
				err = os.Chmod(p, 0o4755)
			}
		case 7:
			err = os.WriteFile(p, []byte("a\r\x1b[2Kb\n"), 0o644)
		}
		if err != nil {
			t.Fatalf("make %q: %v", rel, err)
		}
	}
	return whiteouts
}

// visible tells whether s shows on a terminal as it is, newlines aside.
func visible(s string) bool {
	return escape.Plain([]byte(s))
}

// FuzzExportNames: whatever names and types the sandbox chose, the tar
// export holds only regular files, directories, symlinks and hard links
// to entries before them, and a .wh. name only for a real whiteout; json,
// patch and the left-out lines never carry a character a terminal hides.
func FuzzExportNames(f *testing.F) {
	f.Add([]byte("\x00\x0c.wh.keep.txt\x01\x03dir\x80\x0c.wh..wh..opq\x03\x04gone"))
	f.Add([]byte("\x07\x05cr\x1bx\x00\x03a\rb\x05\x02hl\x04\x04pipe\x06\x04suid"))
	f.Add([]byte("\x01\x04.wh.\x80\x01x\x02\x05\xe2\x80\xaeab\x00\x03\xff\xfe\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		upper := t.TempDir()
		whiteouts := fuzzLayer(t, upper, data)
		lower := t.TempDir()
		s := layerSet{Destination: "/workspace", Upper: upper, Lower: lower}

		var tbuf bytes.Buffer
		rejected, err := exportChanges(&tbuf, "tar", []layerSet{s}, defaultChangeLimits)
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		emitted := map[string]bool{}
		tr := tar.NewReader(&tbuf)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("the export is no tar: %v", err)
			}
			name := strings.TrimSuffix(hdr.Name, "/")
			if strings.HasPrefix(name, "/") || strings.Contains("/"+name+"/", "/../") {
				t.Fatalf("entry %q leaves the layer", hdr.Name)
			}
			base := path.Base(name)
			if strings.HasPrefix(base, whiteoutPrefix) {
				real := path.Join(path.Dir(name), strings.TrimPrefix(base, whiteoutPrefix))
				if hdr.Typeflag != tar.TypeReg || hdr.Size != 0 || !whiteouts[real] {
					t.Fatalf("entry %q reads as a whiteout the sandbox never made", hdr.Name)
				}
			}
			switch hdr.Typeflag {
			case tar.TypeReg, tar.TypeDir, tar.TypeSymlink:
			case tar.TypeLink:
				if !emitted[hdr.Linkname] {
					t.Fatalf("hard link %q to %q, which is not before it", hdr.Name, hdr.Linkname)
				}
			default:
				t.Fatalf("entry %q of type %q", hdr.Name, hdr.Typeflag)
			}
			if hdr.Mode&0o6000 != 0 {
				t.Fatalf("entry %q is setuid/setgid", hdr.Name)
			}
			emitted[hdr.Name] = true
		}
		for _, format := range []string{"json", "patch"} {
			var out bytes.Buffer
			rej, err := exportChanges(&out, format, []layerSet{s}, defaultChangeLimits)
			if err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			if !visible(out.String()) {
				t.Fatalf("%s output holds hidden characters: %q", format, out.String())
			}
			rejected = append(rejected, rej...)
		}
		for _, r := range rejected {
			if !utf8.ValidString(r) || !visible(r) || strings.Contains(r, "\n") {
				t.Fatalf("left-out line holds hidden characters: %q", r)
			}
		}
	})
}
