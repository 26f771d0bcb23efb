package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Containerd is a private containerd: its root, state, sockets and plugin
// directories are all below Dir.
type Containerd struct {
	Dir     string // everything of this instance lives here
	Address string // gRPC socket
	Config  string // the config.toml it runs with
	Log     string

	proc *process
	own  bool // Dir was made by the harness and is removed on Close
}

// ContainerdOptions tune a private containerd.
type ContainerdOptions struct {
	// Dir to use; a new temporary directory when empty.
	Dir string
	// Extra is appended to the generated config.toml (plugin sections).
	Extra string
	// BulkheadConfig is as in ContainerdConfigOptions.
	BulkheadConfig string
}

// StartContainerd starts a private containerd and waits until its socket
// answers. The caller must Close it.
func StartContainerd(opts ContainerdOptions) (*Containerd, error) {
	if err := Ensure(map[string]string{"containerd": "containerd"}); err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return nil, err
	}
	return StartContainerdConfig(ContainerdConfigOptions{Binary: bin, Dir: opts.Dir, BulkheadConfig: opts.BulkheadConfig, Config: func(dir, address string) string {
		// version 2 is what containerd 1.6 and 1.7 read; 2.x converts it.
		return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = %q
%s`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), address, address+".ttrpc",
			filepath.Join(dir, "opt"), opts.Extra)
	}})
}

// NewContainerd starts a private containerd for one test and stops it when
// the test ends.
func NewContainerd(t testing.TB, opts ContainerdOptions) *Containerd {
	t.Helper()
	c, err := StartContainerd(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// Ctr runs ctr against this containerd.
func (c *Containerd) Ctr(args ...string) *exec.Cmd {
	return exec.Command("ctr", append([]string{"--address", c.Address}, args...)...)
}

// Close stops containerd and whatever its shims left, unmounts and removes
// its directory (when the harness made it).
func (c *Containerd) Close() error {
	var errs []string
	if err := c.proc.stop(15 * time.Second); err != nil {
		errs = append(errs, err.Error())
	}
	if err := c.cleanup(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("containerd %s: %s", c.Dir, strings.Join(errs, "; "))
	}
	return nil
}

func (c *Containerd) cleanup() error {
	if pids := killUnder(c.Dir); len(pids) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
	if err := unmountUnder(c.Dir); err != nil {
		return err
	}
	if c.own {
		return os.RemoveAll(c.Dir)
	}
	return nil
}
