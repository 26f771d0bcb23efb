package specs

import "testing"

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
