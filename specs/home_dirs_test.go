package specs

import (
	"os"
	"path/filepath"
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
