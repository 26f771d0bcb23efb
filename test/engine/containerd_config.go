package engine

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ContainerdConfigOptions start a private containerd from a given binary
// with a configuration the caller renders: containerd 2.x with a version 3
// config, a CRI-enabled instance.
type ContainerdConfigOptions struct {
	// Binary is the containerd to run.
	Binary string
	// Dir to use; a new temporary directory when empty.
	Dir string
	// Config renders config.toml for the instance's paths (root and state
	// below dir, grpc address, ttrpc address).
	Config func(dir, address string) string
	// BulkheadConfig, when set, is a bulkhead config.toml written below
	// dir that containerd, its shims and the bulkhead they run read
	// (BULKHEAD_CONFIG).
	BulkheadConfig string
}

// StartContainerdConfig starts a private containerd as StartContainerd
// does, from opts.Binary with opts.Config's config.toml. The caller must
// Close it.
func StartContainerdConfig(opts ContainerdConfigOptions) (*Containerd, error) {
	c := &Containerd{Dir: opts.Dir}
	if c.Dir == "" {
		dir, err := tempDir("bh-ctrd-")
		if err != nil {
			return nil, err
		}
		c.Dir, c.own = dir, true
	}
	if err := os.MkdirAll(c.Dir, 0o711); err != nil {
		return nil, err
	}
	c.Address = filepath.Join(c.Dir, "containerd.sock")
	c.Config = filepath.Join(c.Dir, "config.toml")
	c.Log = filepath.Join(c.Dir, "containerd.log")
	if err := os.WriteFile(c.Config, []byte(opts.Config(c.Dir, c.Address)), 0o644); err != nil {
		c.cleanup()
		return nil, err
	}
	var env []string
	if opts.BulkheadConfig != "" {
		path := filepath.Join(c.Dir, "bulkhead.toml")
		if err := os.WriteFile(path, []byte(opts.BulkheadConfig), 0o644); err != nil {
			c.cleanup()
			return nil, err
		}
		env = append(env, "BULKHEAD_CONFIG="+path)
	}
	var err error
	c.proc, err = startProcess(filepath.Base(opts.Binary), c.Log, []string{opts.Binary, "--config", c.Config}, env...)
	if err != nil {
		c.cleanup()
		return nil, err
	}
	if err := c.waitReady(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("containerd %s: %w", opts.Binary, err)
	}
	return c, nil
}

// Restart stops containerd with SIGTERM, leaving its shims and containers
// running as a real restart does, and starts it again with the same binary
// and config.
func (c *Containerd) Restart() error {
	if err := c.proc.stop(15 * time.Second); err != nil {
		return err
	}
	argv := append([]string{c.proc.cmd.Path}, c.proc.cmd.Args[1:]...)
	p, err := startProcess(c.proc.name, c.Log, argv, c.proc.env...)
	if err != nil {
		return err
	}
	c.proc = p
	return c.waitReady()
}

// waitReady waits until containerd answers on its socket.
func (c *Containerd) waitReady() error {
	return waitFor(c.proc, 30*time.Second, func() error {
		conn, err := net.DialTimeout("unix", c.Address, time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}
