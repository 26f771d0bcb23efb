package workspace

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/specs"
)

func TestSwapMapping(t *testing.T) {
	for _, c := range []struct {
		a, b uint32
		want string
	}{
		{1000, 65534, "0:0:1000,1000:65534:1,1001:1001:64533,65534:1000:1,65535:65535:4294901760"},
		{65534, 1000, "0:0:1000,1000:65534:1,1001:1001:64533,65534:1000:1,65535:65535:4294901760"},
		{0, 65534, "0:65534:1,1:1:65533,65534:0:1,65535:65535:4294901760"},
		{65534, 65535, "0:0:65534,65534:65535:1,65535:65534:1,65536:65536:4294901759"},
		{7, 7, "0:0:4294967295"},
	} {
		if got := SwapMapping(c.a, c.b); got != c.want {
			t.Errorf("SwapMapping(%d, %d) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	for _, c := range []struct{ id, want uint32 }{{1000, 65534}, {65534, 1000}, {0, 0}, {1001, 1001}} {
		if got := shifted(c.id, 1000, 65534); got != c.want {
			t.Errorf("shifted(%d) = %d, want %d", c.id, got, c.want)
		}
	}
}

// TestOwnersAllowed: the shift hands the sandbox only owners that
// workspace_owners names, uid and gid alike (an id that stays as it is
// needs no naming), and only a source its owner opened to others.
func TestOwnersAllowed(t *testing.T) {
	def := specs.DefaultProfile()
	withRoot := specs.DefaultProfile()
	withRoot.WorkspaceOwners = []string{"0", "1000-60000"}
	for _, c := range []struct {
		p    *specs.Profile
		s    idShift
		want string
	}{
		{&def, idShift{UIDFrom: 1000, UIDTo: 65534, GIDFrom: 1000, GIDTo: 65534}, ""},
		{&def, idShift{UIDFrom: 0, UIDTo: 65534, GIDFrom: 0, GIDTo: 65534}, "uid 0"},
		{&def, idShift{UIDFrom: 1000, UIDTo: 65534, GIDFrom: 0, GIDTo: 65534}, "gid 0"},
		{&def, idShift{UIDFrom: 33, UIDTo: 65534, GIDFrom: 33, GIDTo: 65534}, "uid 33"},
		{&def, idShift{UIDFrom: 65534, UIDTo: 65534, GIDFrom: 1000, GIDTo: 65534}, ""},
		{&withRoot, idShift{UIDFrom: 0, UIDTo: 65534, GIDFrom: 0, GIDTo: 65534}, ""},
	} {
		err := ownersAllowed(c.s, 0o755, c.p)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v with %v: %v", c.s, c.p.WorkspaceOwners, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v with %v: %v, want a refusal naming %s", c.s, c.p.WorkspaceOwners, err, c.want)
		}
	}
}

func TestOwnersAllowedPrivateSource(t *testing.T) {
	p := specs.DefaultProfile()
	s := idShift{UIDFrom: 1000, UIDTo: 65534, GIDFrom: 1000, GIDTo: 65534}
	for mode, want := range map[uint32]bool{0o755: true, 0o775: true, 0o1777: true, 0o700: false, 0o711: false, 0o750: false, 0o754: false} {
		if err := ownersAllowed(s, mode, &p); (err == nil) != want {
			t.Errorf("a source of mode %04o: %v, want allowed %v", mode, err, want)
		}
	}
}

// TestPrivateBelow: below a home, a hidden directory is the owner's
// application state, not a checkout; anywhere else, and outside hidden
// directories, a source may be id-mapped.
func TestPrivateBelow(t *testing.T) {
	for p, refused := range map[string]bool{
		"/home/alice/.local/share":    true,
		"/home/alice/.cargo":          true,
		"/home/alice/src/.config/x":   true,
		"/root/.cargo":                true,
		"/home/runner/work/repo/repo": false,
		"/home/alice/src/project":     false,
		"/srv/checkouts/.hidden":      false,
		"/builds/group/project":       false,
	} {
		if err := privateBelow(p); (err != nil) != refused {
			t.Errorf("privateBelow(%s) = %v, refused want %v", p, err, refused)
		}
	}
}

// TestJudgeSourceByDescriptor: the pin judges what it opened, through its
// descriptor: a credential entry at the top of the opened directory, and
// the path the kernel gives the descriptor, refuse it whatever path led
// there.
func TestJudgeSourceByDescriptor(t *testing.T) {
	base := t.TempDir()
	withKeys := filepath.Join(base, "checkout")
	if err := os.MkdirAll(filepath.Join(withKeys, ".aws"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "innocent")
	if err := os.Symlink(withKeys, link); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(link, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	real, err := os.Readlink(self)
	if err != nil {
		t.Fatal(err)
	}
	if why := JudgeSource(real, self); !strings.Contains(why, ".aws") {
		t.Errorf("a source holding .aws, opened through a symlink: %q", why)
	}
	clean := filepath.Join(base, "clean")
	if err := os.Mkdir(clean, 0o755); err != nil {
		t.Fatal(err)
	}
	if why := JudgeSource("/home/alice/.local/share", clean); !strings.Contains(why, ".local") {
		t.Errorf("a descriptor whose path is a hidden directory of a home: %q", why)
	}
	if why := JudgeSource(clean, clean); why != "" {
		t.Errorf("a plain checkout refused: %s", why)
	}
}
