package workspace

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"bulkhead.dev/bulkhead/runtime/escape"
)

// A reviewer may apply or extract an export on macOS or Windows, whose
// filesystems take names this one keeps apart for one: APFS and HFS+ fold
// case, normalise and (HFS+) ignore invisible code points; NTFS folds case,
// drops trailing dots and spaces, reads what follows a colon as a stream of
// the file before it, and answers to a directory's 8.3 short name. So
// ".GIT.", "Git\u200c" and "git~1" are a .git there, and a symlink "Foo"
// stands above an entry "foo/x".

// nameKey is one path component as such a filesystem compares it.
func nameKey(name string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(name) {
		if r >= 0x80 && escape.Hidden(r) {
			continue
		}
		b.WriteRune(foldRune(r))
	}
	k := b.String()
	if i := strings.IndexByte(k, ':'); i >= 0 {
		k = k[:i]
	}
	if t := strings.TrimRight(k, ". "); t != "" {
		return t
	}
	return k
}

// pathKeys is nameKey of every component of a slash-separated path.
func pathKeys(p string) []string {
	parts := strings.Split(p, "/")
	for i, c := range parts {
		parts[i] = nameKey(c)
	}
	return parts
}

// foldRune is one rune for every spelling of a letter (K, k and the Kelvin
// sign): the lower case of the smallest rune that r, its upper case or its
// lower case folds to. NTFS compares names by upper-casing them, which
// makes the dotless ı an I, though no case folding does: ".gıt" is a .git
// there.
func foldRune(r rune) rune {
	m := r
	for _, c := range []rune{r, unicode.ToUpper(r), unicode.ToLower(r)} {
		for f := unicode.SimpleFold(c); ; f = unicode.SimpleFold(f) {
			m = min(m, f)
			if f == c {
				break
			}
		}
	}
	return unicode.ToLower(m)
}

// windowsAlias tells whether a name key (nameKey: trailing dots and
// spaces cut, as Windows cuts them) is one Windows may read as another
// entry: it holds a backslash, a directory separator there (a
// ".git\\config" is a .git's config), or it has the form of an 8.3 short
// name ("longli~1", "git~2", "readme~1.md"), which names whatever entry the
// volume gave that short name: a link the same archive made, a .git.
// A colon is cut from the key (a stream is its file's); windowsName
// judges the name itself.
func windowsAlias(key string) bool {
	if strings.ContainsRune(key, '\\') {
		return true
	}
	base, ext, _ := strings.Cut(key, ".")
	if strings.Contains(ext, ".") || len(ext) > 3 || len(base) > 8 {
		return false
	}
	i := strings.LastIndexByte(base, '~')
	return i > 0 && i < len(base)-1 && strings.Trim(base[i+1:], "0123456789") == ""
}

// windowsName tells whether a name, as the job wrote it, is one Windows
// reads as something else: a colon names a drive ("C:", so
// "C:/Users/x/AppData/.../Startup/run.bat" is that absolute path to
// Python's tarfile there) or another file's stream ("a.txt::$DATA" is
// a.txt), a backslash is a directory separator.
func windowsName(name string) bool { return strings.ContainsAny(name, ":\\") }
