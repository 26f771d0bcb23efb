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
// /home/<name>. An unreadable file lists none, and the spelling-based
// refusal (homeDir) still stands.
var passwdHomes = sync.OnceValue(func() []string {
	users, err := user.ParsePasswdFile("/etc/passwd")
	if err != nil {
		return nil
	}
	var homes []string
	for _, u := range users {
		if h := filepath.Clean(u.Home); filepath.IsAbs(h) && h != "/" {
			homes = append(homes, h)
		}
	}
	return homes
})

// homeOfAUser is the home directory p is or holds, "" for none.
func homeOfAUser(p string, homes []string) string {
	for _, h := range homes {
		if under(h, p) {
			return h
		}
	}
	return ""
}

// HomeAbove is the home directory p lies below ("" for none): /root, a
// /home/<name>, or a home /etc/passwd lists.
func HomeAbove(p string) string {
	homes := append([]string{"/root"}, passwdHomes()...)
	if rest, ok := strings.CutPrefix(p, "/home/"); ok {
		if name, _, ok := strings.Cut(rest, "/"); ok {
			homes = append(homes, "/home/"+name)
		}
	}
	for _, h := range homes {
		if p != h && under(p, h) {
			return h
		}
	}
	return ""
}
