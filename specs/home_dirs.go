package specs

import (
	"errors"
	"fmt"
	"path/filepath"
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
	for _, h := range passwdHomes() {
		if p != h && under(p, h) {
			return h
		}
	}
	return ""
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
	home := HomeAbove(real)
	if home == "" {
		return ""
	}
	rel, err := filepath.Rel(home, real)
	if err != nil || rel == "." {
		return ""
	}
	if first, _, _ := strings.Cut(rel, "/"); strings.HasPrefix(first, ".") {
		return real + " lies in " + filepath.Join(home, first) + ", a dot-entry of the home " + home + ", which holds the owner's application state and keys"
	}
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); errors.Is(err, unix.ENOENT) {
			return "" // nothing there to keep from anyone; the pin judges what is
		} else if err != nil {
			return real + ": " + dir + " cannot be checked (" + err.Error() + ")"
		}
		if st.Mode&0o001 == 0 {
			return fmt.Sprintf("%s lies below %s (mode %04o), which others may not enter: a bind would show the job what the home's owner keeps from every other user; bind a directory others may reach", real, dir, st.Mode&0o7777)
		}
		if dir == home || dir == "/" {
			return ""
		}
	}
}

// plainBindRefusal is what a bind that is no writable workspace must pass
// besides host_mounts' judgement of every bind source (privateInHome).
func plainBindRefusal(c *Context, src string) string {
	real, err := c.resolve(filepath.Clean(src))
	if err != nil {
		return ""
	}
	return privateInHome(real)
}

// PlainBindRefusal is plainBindRefusal of a source already resolved, for
// the runtime to apply again to what it opened.
func PlainBindRefusal(real string) string { return privateInHome(real) }
