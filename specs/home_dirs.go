package specs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/sys/user"
	"golang.org/x/sys/unix"
)

// passwdHomes are the home directories of the host's users, as
// /etc/passwd lists them: a home is a home wherever it lives
// (/home/staff/alice, /srv/users/alice, /data/alice), not only at
// /home/<name>. Each is listed as written and, where that is a symlink or
// lies below one, as resolved: sources are judged by their resolved
// path. An unreadable file lists none, and the spelling-based refusal
// (namedHome) still stands.
var passwdHomes = sync.OnceValue(func() []string {
	users, err := user.ParsePasswdFile("/etc/passwd")
	if err != nil {
		return nil
	}
	var homes []string
	for _, u := range users {
		if h := filepath.Clean(u.Home); filepath.IsAbs(h) && h != "/" {
			homes = append(homes, resolvedToo(h)...)
		}
	}
	return homes
})

// linkedHomes are the targets of the homes by name alone that are
// symlinks (/home/bob -> /srv/users/bob, as an LDAP or sssd site lays
// them out): sources are judged by their resolved path, where the name
// /home/bob no longer shows.
var linkedHomes = sync.OnceValue(func() []string {
	var homes []string
	for _, parent := range homeParents() {
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			if real, err := filepath.EvalSymlinks(filepath.Join(parent, e.Name())); err == nil && real != "/" {
				homes = append(homes, real)
			}
		}
	}
	return homes
})

// knownHomes are the homes /etc/passwd lists and those /home links to.
var knownHomes = func() []string { return append(slices.Clone(passwdHomes()), linkedHomes()...) }

// homeParents are the directories whose children are homes by name alone
// (a user of LDAP or sssd is in no /etc/passwd): /home, as written and as
// resolved.
var homeParents = sync.OnceValue(func() []string { return resolvedToo("/home") })

// resolvedToo is p, and p with its symlinks resolved where that differs.
func resolvedToo(p string) []string {
	if real, err := filepath.EvalSymlinks(p); err == nil && real != p && real != "/" {
		return []string{p, real}
	}
	return []string{p}
}

// homeOfAUser is the home directory p is or holds, "" for none.
func homeOfAUser(p string, homes []string) string {
	for _, h := range homes {
		if under(h, p) {
			return h
		}
	}
	return ""
}

// namedHome is the home p is or lies below by name alone: /root, or a
// child of a homeParents directory.
func namedHome(p string) string {
	if under(p, "/root") {
		return "/root"
	}
	for _, parent := range homeParents() {
		if rest, ok := strings.CutPrefix(p, parent+"/"); ok {
			name, _, _ := strings.Cut(rest, "/")
			return parent + "/" + name
		}
	}
	return ""
}

// HomeAbove is the home directory p lies below ("" for none): /root, a
// /home/<name>, or a home /etc/passwd lists, each also as resolved.
func HomeAbove(p string) string {
	if h := namedHome(p); h != "" && h != p {
		return h
	}
	for _, h := range knownHomes() {
		if p != h && under(p, h) {
			return h
		}
	}
	return ""
}

// homesAbove are all the homes p lies below, outermost first: a home
// /etc/passwd lists may lie below another, or below a /home/<name> that
// is none (/home/staff/dave), and each keeps its own dot-entries.
func homesAbove(p string) []string {
	var homes []string
	if h := namedHome(p); h != "" && h != p {
		homes = append(homes, h)
	}
	for _, h := range knownHomes() {
		if p != h && under(p, h) && !slices.Contains(homes, h) {
			homes = append(homes, h)
		}
	}
	slices.SortFunc(homes, func(a, b string) int { return len(a) - len(b) })
	return homes
}

// privateInHome refuses a plain bind of a path below a home that the
// owner keeps from others: runc mounts as root, past every directory
// above the source, so a bind of ~/.npmrc below a 0700 home showed the
// job a token no other local user can reach. The source must lie in no
// dot-entry of the home (~/.npmrc, ~/.m2, ~/.config: the owner's
// application state and keys, listed or not among the credentials), and
// every directory from the home down to it must let others search it, so
// that the bind shows the job what any local user may read. A workspace
// is the owner's checkout by design (workspace_owners) and is judged by
// its own rules.
func privateInHome(real string) string {
	homes := homesAbove(real)
	if len(homes) == 0 {
		return ""
	}
	// The outermost home: every directory below it counts.
	dir, st, err := closedAbove(real, homes[0], func(dir string, st *unix.Stat_t) bool { return whoIsKeptOut(dir, st) != "" })
	switch {
	case err != nil:
		return "cannot be checked: " + err.Error()
	case dir == "":
		return ""
	}
	return fmt.Sprintf("lies below %s (mode %04o%s), where %s: a bind would show the job what the home's owner keeps from other users; bind a directory others may reach", dir, st.Mode&0o7777, openedTo(dir, st), whoIsKeptOut(dir, st))
}

// closedAbove walks from real's parent up to top (or /) and returns the
// first directory closed says keeps others out, with its attributes, or
// "". A directory that is not there keeps nothing from anyone: the pin
// judges what is there then.
func closedAbove(real, top string, closed func(dir string, st *unix.Stat_t) bool) (string, *unix.Stat_t, error) {
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); errors.Is(err, unix.ENOENT) {
			return "", nil, nil
		} else if err != nil {
			return "", nil, fmt.Errorf("%s: %w", dir, err)
		}
		if closed(dir, &st) {
			return dir, &st, nil
		}
		if dir == top || dir == "/" {
			return "", nil, nil
		}
	}
}

// privateOfAUser refuses a plain bind of a path below a directory a user
// other than root keeps from others, wherever it lies: runc mounts as
// root, past it, so a bind of /tmp/alice/notes below alice's 0700
// /tmp/alice showed the job what no other local user can read, as a
// home's would (privateInHome). Root's own such directories (a harness's
// mktemp -d) are the caller's, and let be, but for one an ACL or a group
// other than root's opens to some users (openedTo).
func privateOfAUser(real string) string {
	dir, st, err := closedAbove(real, "/", func(dir string, st *unix.Stat_t) bool {
		return whoIsKeptOut(dir, st) != "" && (st.Uid != 0 || openedTo(dir, st) != "")
	})
	switch {
	case err != nil:
		return "cannot be checked: " + err.Error()
	case dir == "":
		return ""
	}
	return fmt.Sprintf("lies below %s (mode %04o, uid %d's%s), where %s: a bind would show the job what its owner keeps from other users; bind a directory others may reach", dir, st.Mode&0o7777, st.Uid, openedTo(dir, st), whoIsKeptOut(dir, st))
}

// whoIsKeptOut says whom the directory dir (st) keeps from entering it,
// or "" for no one: its owner, a user other than root, without x; others
// without x; its group without x, since a user in the group is held to
// the group's bits, not the others'; or, with an access ACL, any user a
// named entry names, whatever the others' bits.
func whoIsKeptOut(dir string, st *unix.Stat_t) string {
	switch {
	case st.Uid != 0 && st.Mode&0o100 == 0:
		return "its owner may not enter it"
	case st.Mode&0o001 == 0:
		return "others may not enter it"
	case st.Mode&0o010 == 0:
		return "its group may not enter it"
	case HasACL(dir):
		return "its ACL may keep some users out"
	}
	return ""
}

// HasACL tells whether the directory at path has an access ACL: root's
// directory that an ACL opens to some users (udisks's /media/<user>,
// root's 0750 with user:alice:r-x) is theirs, kept from everyone else, and
// a group's mode bits under an ACL are its mask, above what the group's
// own entry may allow. One that cannot be read counts as having one; a
// path that is not there has none, and keeps nothing from anyone.
func HasACL(path string) bool {
	_, err := unix.Getxattr(path, "system.posix_acl_access", nil)
	return !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOENT)
}

// openedTo names whom a directory that keeps others out opens to beside
// its owner, for root's, which are the caller's but for these: the users
// of an access ACL (udisks's /media/<user>), or a group other than root's
// by its bits (root:staff 0750). "" for neither.
func openedTo(dir string, st *unix.Stat_t) string {
	switch {
	case HasACL(dir):
		return " with an ACL for some users"
	case st.Gid != 0 && st.Mode&0o010 != 0 && st.Mode&0o001 == 0:
		return fmt.Sprintf(" open to group %d", st.Gid)
	}
	return ""
}

// homePrivacyRefusal judges a bind source (real, opened at fd, -1 when
// not) and every other place its files are at by the homes they lie in:
// a home mounted again elsewhere (/home/alice bound at /srv/mirror/alice)
// is the same home. A plain bind is judged by privateInHome; a writable
// workspace, the owner's checkout by design, only by the dot-entries.
func homePrivacyRefusal(c *Context, real string, fd int, plain bool) string {
	// A tree holding credentials at its top is a home, wherever it lives
	// and whatever /etc/passwd says: bound, it shows the job whatever of
	// them others may read (an ssh config, a world-readable key file).
	at := real
	if fd >= 0 {
		at = "/proc/self/fd/" + strconv.Itoa(fd)
	}
	if cred := CredentialEntryIn(at); cred != "" {
		return real + " holds " + cred + " at its top, as a home directory does: the job would read what of it others may; bind a directory without it"
	}
	if plain {
		if home, cred := homeBelow(at); home != "" {
			return real + " holds " + home + ", which holds " + cred + " as a home directory does (a directory of homes): the job would read what of them others may; bind a directory without it"
		}
	}
	paths := []string{real}
	if src, err := c.mountedFrom(real, fd); err == nil {
		// Every place counts, a mount made inside a home too: it cannot be
		// told from the owner's own (a home on a filesystem of its own at
		// /home/staff/dave, ~/.local kept on another disk), so a public
		// dataset that is also bound into a private home is refused.
		for _, pl := range src.Places {
			paths = append(paths, pl.Path)
		}
	}
	for _, p := range paths {
		why := dotEntryOfHome(p)
		if why == "" && plain {
			why = privateInHome(p)
		}
		if why == "" && plain {
			why = privateOfAUser(p)
		}
		if why != "" && p != real {
			return real + " is a mount of " + p + ", which " + why
		}
		if why != "" {
			return real + " " + why
		}
	}
	return ""
}

// HomePrivacyRefusal is homePrivacyRefusal for the runtime to apply again
// to what it opened.
func HomePrivacyRefusal(c *Context, real string, fd int, plain bool) string {
	return homePrivacyRefusal(c, real, fd, plain)
}

// dotEntryOfHome refuses a path in a dot-entry of a home (~/.npmrc, ~/.m2,
// ~/.config: the owner's application state and keys, listed among the
// credentials or not).
func dotEntryOfHome(p string) string {
	for _, home := range homesAbove(p) {
		rel, err := filepath.Rel(home, p)
		if err != nil || rel == "." {
			continue
		}
		if first, _, _ := strings.Cut(rel, "/"); strings.HasPrefix(first, ".") {
			return "lies in " + filepath.Join(home, first) + ", a dot-entry of the home " + home + ", which holds the owner's application state and keys"
		}
	}
	return ""
}

// maxHomesLooked bounds the entries homeBelow looks at: a source with
// more is judged by its first ones (a directory of homes holds few).
const maxHomesLooked = 4096

// homeBelow names a directory one level below dir that holds credentials
// at its top (CredentialEntryIn), and the credential: a directory of
// homes copied elsewhere (/srv/backup/homes) is each of them bound.
// Checked for plain binds: a workspace is its owner's checkout.
func homeBelow(dir string) (home, cred string) {
	f, err := os.Open(dir)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	entries, _ := f.ReadDir(maxHomesLooked)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if c := CredentialEntryIn(filepath.Join(dir, e.Name())); c != "" {
			return e.Name(), c
		}
	}
	return "", ""
}
