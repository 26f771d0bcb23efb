package inguest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// liar edits <bundle>/config.json on create, then becomes runc.
func liar(mode string, args []string) int {
	runc, err := exec.LookPath("runc")
	if err != nil {
		fmt.Fprintln(os.Stderr, "liar:", err)
		return 1
	}
	bundleDir, create := "", false
	for i, a := range args {
		switch {
		case a == "create":
			create = true
		case (a == "--bundle" || a == "-b") && i+1 < len(args):
			bundleDir = args[i+1]
		case strings.HasPrefix(a, "--bundle="):
			bundleDir = strings.TrimPrefix(a, "--bundle=")
		}
	}
	if create && bundleDir != "" && mode == "burst" {
		return burstAfterCreate(runc, args, filepath.Join(bundleDir, "config.json"))
	}
	if create && bundleDir != "" {
		if err := lie(mode, filepath.Join(bundleDir, "config.json")); err != nil {
			fmt.Fprintln(os.Stderr, "liar:", err)
			return 1
		}
	}
	err = syscall.Exec(runc, append([]string{runc}, args...), os.Environ())
	fmt.Fprintln(os.Stderr, "liar: exec runc:", err)
	return 1
}

// burstAfterCreate runs runc's create, then gives the container's cgroup
// a CPU burst: runc 1.1 cannot set one from the spec, a newer runc or a
// process in the host's cgroup namespace can.
func burstAfterCreate(runc string, args []string, config string) int {
	cmd := exec.Command(runc, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "liar: runc:", err)
		return 1
	}
	data, err := os.ReadFile(config)
	var s struct {
		Linux struct {
			CgroupsPath string `json:"cgroupsPath"`
		} `json:"linux"`
	}
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join("/sys/fs/cgroup", s.Linux.CgroupsPath, "cpu.max.burst"), []byte("50000"), 0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "liar:", err)
		return 1
	}
	return 0
}

// lie weakens one limit, keeping every other field as it was (a generic
// map, so fields this test does not know survive).
func lie(mode, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	linux, _ := s["linux"].(map[string]any)
	res, _ := linux["resources"].(map[string]any)
	memory, _ := res["memory"].(map[string]any)
	switch mode {
	case "pids":
		delete(res, "pids")
	case "swap":
		// memory+swap twice the memory limit: runc writes
		// memory.swap.max = the memory limit, which only a reader that
		// adds memory.max sees as above the ceiling.
		limit, _ := memory["limit"].(float64)
		memory["swap"] = 2 * limit
	case "cpu":
		delete(res, "cpu")
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	out, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// liarEnvFor writes the wrapper script and a configuration that makes it
// the default profile's runc backend.
func liarEnvFor(t *testing.T, mode string) env {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "liar")
	body := fmt.Sprintf("#!/bin/sh\n# A backend that silently weakens one limit (%s).\nexport %s=%s\nexec %q \"$@\"\n", mode, liarEnv, mode, self)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return newEnv(t, fmt.Sprintf("\n[backends.runc]\npath = %q\n\n[profiles.default]\nbackend = \"runc\"\n", script))
}

// TestLiarFailsClosed: a backend that drops pids.max, gives the container
// swap, drops cpu.max or adds a cpu.max.burst on v2 makes create fail naming the control, with
// the values read from the v2 files, and leaves no cgroup, state or record
// behind and config.json the caller's.
func TestLiarFailsClosed(t *testing.T) {
	needV2(t)
	cases := []struct{ mode, control, observed string }{
		{"pids", "control pids", "pids.max max"},
		{"swap", "control memory+swap", "memory+swap limit 536870912"},
		{"cpu", "control cpu", "cpu quota max"},
		{"burst", "control cpu", "cpu burst 50000"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			e := liarEnvFor(t, c.mode)
			id := newID(t)
			b := sleeper(t, id)
			orig := readConfig(t, b)
			r := e.run(t, "", "create", "--bundle", b, id)
			t.Cleanup(func() { e.run(t, "", "delete", "--force", id) })
			if r.code == 0 {
				t.Fatalf("create succeeded under a backend that weakened %s", c.mode)
			}
			for _, want := range []string{c.control, "kernel applied " + c.observed} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("error does not say %q:\n%s", want, r.stderr)
				}
			}
			e.assertNothingLeft(t, id)
			unchanged(t, b, orig)
		})
	}
}
