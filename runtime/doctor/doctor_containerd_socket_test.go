package doctor

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The containerd socket is judged by who may connect: root alone is ok;
// a group other than root's, anyone, or a socket not root's is a warning
// naming why; the address comes from the configuration's [grpc] address.
func TestContainerdSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown of the socket to root and back needs root")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "containerd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte("version = 2\n[grpc]\n  address = \""+sock+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode     os.FileMode
		uid, gid int
		want     Status
		who      string
	}{
		{0o660, 0, 0, StatusOK, "only root may connect"},
		{0o600, 0, 1000, StatusOK, "only root may connect"},
		{0o660, 0, 1000, StatusWarn, "group 1000 may speak containerd's API"},
		{0o666, 0, 0, StatusWarn, "anyone may speak"},
		{0o600, 1000, 0, StatusWarn, "uid 1000 may speak"},
	} {
		if err := os.Chown(sock, tc.uid, tc.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(sock, tc.mode); err != nil {
			t.Fatal(err)
		}
		c := ContainerdSocket(config)
		if c.Looked != sock || c.Status != tc.want || !strings.Contains(c.Found, tc.who) || (c.Status == StatusWarn) != (c.Fix != "") {
			t.Errorf("mode %04o owner %d:%d: %+v, want %s naming %q", tc.mode, tc.uid, tc.gid, c, tc.want, tc.who)
		}
	}
	if c := ContainerdSocket(filepath.Join(dir, "absent.toml")); c.Looked != defaultContainerdSocket {
		t.Errorf("without a configuration: looked at %s, want %s", c.Looked, defaultContainerdSocket)
	}
}
