package specs

import (
	"path/filepath"
	"strings"
	"sync"

	"github.com/moby/sys/user"
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
