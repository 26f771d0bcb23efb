package specs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestHomeOfAUser: a bind source that is a user's home, or holds one, is
// found wherever the home lives; a directory inside a home is not one.
func TestHomeOfAUser(t *testing.T) {
	homes := []string{"/home/staff/alice", "/srv/users/bob", "/var/lib/postgresql"}
	for p, want := range map[string]string{
		"/home/staff/alice":         "/home/staff/alice",
		"/home/staff":               "/home/staff/alice",
		"/srv/users":                "/srv/users/bob",
		"/srv/users/bob":            "/srv/users/bob",
		"/home/staff/alice/project": "",
		"/srv/users/bobby":          "",
		"/srv/checkouts/x":          "",
	} {
		if got := homeOfAUser(p, homes); got != want {
			t.Errorf("homeOfAUser(%s) = %q, want %q", p, got, want)
		}
	}
	// root's home is in every /etc/passwd.
	if got := homeOfAUser("/root", passwdHomes()); got != "/root" {
		t.Errorf("root's home through /etc/passwd: %q, want /root", got)
	}
}

// TestResolvedToo: a home given through a symlink is matched by its
// resolved path too, as sources are judged by theirs.
func TestResolvedToo(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "var-home", "alice")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "home")
	if err := os.Symlink(filepath.Join(dir, "var-home"), link); err != nil {
		t.Fatal(err)
	}
	homes := resolvedToo(filepath.Join(link, "alice"))
	if homeOfAUser(real, homes) == "" || homeOfAUser(filepath.Join(link, "alice"), homes) == "" {
		t.Errorf("homes %v: the home is not matched by both its paths", homes)
	}
}

// TestDotEntryOfNestedHome: a home /etc/passwd lists below a /home/<name>
// that is none (/home/staff/dave) keeps its own dot-entries, as the
// outer one keeps its.
func TestDotEntryOfNestedHome(t *testing.T) {
	defer func(f func() []string) { knownHomes = f }(knownHomes)
	knownHomes = func() []string { return []string{"/home/staff/dave", "/srv/users/erin"} }
	for p, refused := range map[string]bool{
		"/home/staff/dave/.m2/settings.xml": true,
		"/home/staff/dave/.npmrc":           true,
		"/home/staff/.profile":              true,
		"/home/staff/dave/src/app":          false,
		"/srv/users/erin/.config/gh":        true,
		"/srv/users/erin/work":              false,
	} {
		if got := dotEntryOfHome(p) != ""; got != refused {
			t.Errorf("dotEntryOfHome(%s) refuses: %v, want %v", p, got, refused)
		}
	}
	if got := homesAbove("/home/staff/dave/src"); !slices.Equal(got, []string{"/home/staff", "/home/staff/dave"}) {
		t.Errorf("homesAbove = %v, want the outer home first", got)
	}
}
