package specs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// maxBindEntries bounds the walk that looks for sockets in a bind source.
// A tree larger than this is refused rather than trusted unread.
const maxBindEntries = 1_000_000

var errTooLarge = errors.New("too many entries")

// JudgeBindSource says why a bind source, named by its real path on the
// host, must not reach the sandbox, or "": the whole host_mounts judgement
// (denylist, allowlist, what is mounted there, sockets), for the runtime
// to apply again to what it really opened.
func JudgeBindSource(c *Context, annotations map[string]string, real string) string {
	if why := hostPathRefusal(real); why != "" {
		return why
	}
	return bindSourceRefusal(c, annotations, real)
}

// IsBind tells whether m is a bind mount, by type or by option.
func IsBind(m rspec.Mount) bool { return isBind(m) }

// bindSourceRefusal is the allowlist side of host_mounts: the source must
// lie below one of the profile's bind_roots, or be the engine's own file
// for this container, and hold no socket. It returns "" when allowed.
func bindSourceRefusal(c *Context, annotations map[string]string, src string) string {
	real, err := c.resolve(filepath.Clean(src))
	if err != nil {
		return "the source cannot be resolved on the host (" + err.Error() + ")"
	}
	real = canonicalRun(real)
	if why := c.mountedRefusal(real); why != "" {
		return why
	}
	if kind, id, ok := engineFileOwner(real); ok {
		if !ownedByThisContainer(c, annotations, kind, id) {
			return real + " is the engine's file for " + kind + " " + id + ", not for this container"
		}
	} else if !belowRoot(c.Profile.BindRoots, real) {
		return real + " is not below any of the profile's bind_roots " + fmtList(c.Profile.BindRoots)
	}
	if sock, err := c.findSocket(real); err != nil {
		return fmt.Sprintf("the source cannot be checked for sockets (%v)", err)
	} else if sock != "" {
		return sock + " is a socket: connecting to it needs no write access to the mount, and reaches a service outside the sandbox"
	}
	return ""
}

// mountedRefusal judges the files really mounted at real: when a bind or
// volume shows another part of the host there, that part must pass the
// same rules as if the caller had named it.
func (c *Context) mountedRefusal(real string) string {
	from, err := c.mountedFrom(real)
	if err != nil {
		return "where the source's files come from cannot be told (" + err.Error() + ")"
	}
	if from == real {
		return ""
	}
	if why := lexicalRefusal(canonicalRun(from)); why != "" {
		return real + " is a mount of " + from + ": " + why
	}
	if _, _, ok := engineFileOwner(canonicalRun(from)); !ok && !belowRoot(c.Profile.BindRoots, from) {
		return real + " is a mount of " + from + ", which is not below any of the profile's bind_roots"
	}
	return ""
}

func belowRoot(roots []string, p string) bool {
	for _, r := range roots {
		if under(p, filepath.Clean(r)) {
			return true
		}
	}
	return false
}

// findSocket returns the first socket at or below root on root's own
// filesystem (a plain bind does not carry submounts), or "". A source
// that does not exist yet has none.
func findSocket(root string) (string, error) {
	st, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if st.Mode()&fs.ModeSocket != 0 {
		return root, nil
	}
	if !st.IsDir() {
		return "", nil
	}
	dev := st.Sys().(*syscall.Stat_t).Dev
	found, n := "", 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return nil // root cannot read it: neither can the sandbox
			}
			return err
		}
		if n++; n > maxBindEntries {
			return errTooLarge
		}
		switch {
		case d.Type()&fs.ModeSocket != 0:
			found = p
			return filepath.SkipAll
		case d.IsDir() && p != root:
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if info.Sys().(*syscall.Stat_t).Dev != dev {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if errors.Is(err, errTooLarge) {
		return "", fmt.Errorf("more than %d entries", maxBindEntries)
	}
	return found, err
}
