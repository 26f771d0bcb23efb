package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
)

// configV2 is a containerd 1.x config.toml as administrators keep them:
// comments, their own runtime, the CRI plugin tuned.
const configV2 = `# containerd 1.6, managed by hand
version = 2
root = "/var/lib/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  restrict_oom_score_adj = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true # the kubelet uses systemd
`

// configV3 is a containerd 2.x config.toml (version 3).
const configV3 = `version = 3
root = '/var/lib/containerd'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'

  [plugins.'io.containerd.cri.v1.runtime']
    enable_selinux = false

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          runtime_type = 'io.containerd.runc.v2'
`

func newContainerd(t *testing.T, content string) *Containerd {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if content != "" {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &Containerd{Config: path, Name: "bulkhead", Version: 2}
}

// handlerOf reads plugins.<plugin>.containerd.runtimes.<name> back.
func handlerOf(t *testing.T, text, plugin, name string) map[string]any {
	t.Helper()
	var tree map[string]any
	if err := toml.Unmarshal([]byte(text), &tree); err != nil {
		t.Fatalf("result is not TOML: %v\n%s", err, text)
	}
	r := runtimesOf(tree, []string{"plugins", plugin, "containerd", "runtimes"})
	h, _ := r[name].(map[string]any)
	return h
}

func TestContainerdInstallBothVersionsTwiceThenUninstall(t *testing.T) {
	for _, tc := range []struct {
		name, content, plugin string
	}{
		{"v2", configV2, "io.containerd.grpc.v1.cri"},
		{"v3", configV3, "io.containerd.cri.v1.runtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newContainerd(t, tc.content)
			res, err := c.Install()
			if err != nil {
				t.Fatal(err)
			}
			if !res.Written || len(res.Changes) != 1 {
				t.Fatalf("first install: written %v, changes %v", res.Written, res.Changes)
			}
			after := read(t, c.Config)
			if !strings.HasPrefix(after, tc.content) {
				t.Errorf("the administrator's part of the file changed:\n%s", after)
			}
			if h := handlerOf(t, after, tc.plugin, "bulkhead"); h["runtime_type"] != ShimRuntimeType || h["options"] != nil {
				t.Errorf("handler bulkhead = %v, want runtime_type %s and no options", h, ShimRuntimeType)
			}
			if h := handlerOf(t, after, tc.plugin, "bulkhead-runsc"); h != nil {
				t.Errorf("a gVisor handler was written: %v", h)
			}
			if h := handlerOf(t, after, tc.plugin, "runc"); h["runtime_type"] != "io.containerd.runc.v2" {
				t.Errorf("the administrator's runc handler is gone: %v", h)
			}
			if got := read(t, c.Config+BackupSuffix); got != tc.content {
				t.Errorf("backup is not the original:\n%s", got)
			}

			res, err = c.Install()
			if err != nil {
				t.Fatal(err)
			}
			if res.Written || len(res.Changes) != 0 || read(t, c.Config) != after {
				t.Errorf("second install changed something: %v", res.Changes)
			}

			res, err = c.Uninstall()
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Changes) != 1 {
				t.Errorf("uninstall changes: %v", res.Changes)
			}
			if got := read(t, c.Config); got != tc.content {
				t.Errorf("uninstall did not give back the file byte for byte:\n%s", got)
			}
			res, err = c.Uninstall()
			if err != nil || res.Written || len(res.Changes) != 0 {
				t.Errorf("second uninstall: %v %v", res, err)
			}
		})
	}
}

func TestContainerdInstallNewFileAndRemoveIt(t *testing.T) {
	for _, version := range []int64{2, 3} {
		c := newContainerd(t, "")
		c.Version = version
		if _, err := c.Install(); err != nil {
			t.Fatal(err)
		}
		text := read(t, c.Config)
		plugin := criPlugin[version]
		if h := handlerOf(t, text, plugin, "bulkhead"); h["runtime_type"] != ShimRuntimeType {
			t.Fatalf("version %d: no handler in\n%s", version, text)
		}
		res, err := c.Uninstall()
		if err != nil {
			t.Fatal(err)
		}
		if !res.Removed {
			t.Errorf("version %d: the file install created was not removed", version)
		}
		if _, err := os.Stat(c.Config); !os.IsNotExist(err) {
			t.Errorf("version %d: %s still exists", version, c.Config)
		}
	}
}

func TestContainerdDryRunWritesNothing(t *testing.T) {
	c := newContainerd(t, configV2)
	c.DryRun = true
	res, err := c.Install()
	if err != nil {
		t.Fatal(err)
	}
	if res.Written || len(res.Changes) != 1 || !strings.Contains(string(res.After), "bulkhead") {
		t.Errorf("dry run: %+v", res)
	}
	if read(t, c.Config) != configV2 {
		t.Error("dry run changed the file")
	}
	if _, err := os.Stat(c.Config + BackupSuffix); !os.IsNotExist(err) {
		t.Error("dry run wrote a backup")
	}
}

// The gVisor handler an earlier install wrote (containerd's runc shim with
// BinaryName bulkhead-runsc) runs a pod's sandbox and none of its
// containers: install takes it away, and the file keeps the rest. A
// NAME-runsc handler the administrator wrote for something else stays.
func TestContainerdInstallRemovesFormerGVisorHandler(t *testing.T) {
	const plugin = "io.containerd.grpc.v1.cri"
	path := []string{"plugins", plugin, "containerd", "runtimes"}
	former, err := renderBlock(path, map[string]map[string]any{
		"bulkhead":       {"runtime_type": ShimRuntimeType},
		"bulkhead-runsc": {"runtime_type": "io.containerd.runc.v2", "options": map[string]any{"BinaryName": "/usr/local/bin/bulkhead-runsc"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newContainerd(t, configV2+"\n"+string(former))
	res, err := c.Install()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Action != "removed" || !strings.HasSuffix(res.Changes[0].Key, "bulkhead-runsc") {
		t.Errorf("changes: %v", res.Changes)
	}
	after := read(t, c.Config)
	if !strings.HasPrefix(after, configV2) || handlerOf(t, after, plugin, "bulkhead-runsc") != nil || handlerOf(t, after, plugin, "bulkhead")["runtime_type"] != ShimRuntimeType {
		t.Errorf("after install:\n%s", after)
	}

	// The administrator's own handler of that name stays, whatever it
	// holds: one of other content, and one exactly as install wrote it
	// but outside install's block, with more options, or changed in it.
	for _, own := range []string{
		"\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.bulkhead-runsc]\n  runtime_type = \"io.containerd.runsc.v1\"\n",
		"\n# mine\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.bulkhead-runsc]\n  runtime_type = \"io.containerd.runc.v2\"\n" +
			"  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.bulkhead-runsc.options]\n    BinaryName = \"/opt/admin/bulkhead-runsc\"\n",
		"\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.bulkhead-runsc]\n  runtime_type = \"io.containerd.runc.v2\"\n" +
			"  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.bulkhead-runsc.options]\n    BinaryName = \"/opt/admin/bulkhead-runsc\"\n    SystemdCgroup = true\n",
	} {
		c = newContainerd(t, configV2+own)
		if _, err := c.Install(); err != nil {
			t.Fatal(err)
		}
		installed := read(t, c.Config)
		if !strings.HasPrefix(installed, configV2+own) {
			t.Errorf("install changed the administrator's part of the file:\n%s", installed)
		}
		if _, err := c.Uninstall(); err != nil {
			t.Fatal(err)
		}
		if got := read(t, c.Config); got != configV2+own {
			t.Errorf("uninstall did not give back the file:\n%s", got)
		}
	}
	changed := strings.Replace(configV2+"\n"+string(former), "BinaryName = '/usr/local/bin/bulkhead-runsc'", "BinaryName = '/usr/local/bin/bulkhead-runsc'\nSystemdCgroup = true", 1)
	if !strings.Contains(changed, "SystemdCgroup") {
		t.Fatalf("no options table in the former block:\n%s", former)
	}
	c = newContainerd(t, changed)
	if res, err := c.Install(); err != nil || len(res.Changes) != 0 {
		t.Errorf("install of a file whose gVisor handler was changed in the block: %v, %v", res.Changes, err)
	}
}

// An inline runtimes table cannot take an appended table: install writes
// the whole file through go-toml, keeps every value, and uninstall removes
// the handlers again.
func TestContainerdInlineRuntimesFallsBackToRewrite(t *testing.T) {
	const inline = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nruntimes = { runc = { runtime_type = \"io.containerd.runc.v2\" } }\n"
	c := newContainerd(t, inline)
	if _, err := c.Install(); err != nil {
		t.Fatal(err)
	}
	text := read(t, c.Config)
	if h := handlerOf(t, text, "io.containerd.grpc.v1.cri", "runc"); h["runtime_type"] != "io.containerd.runc.v2" {
		t.Errorf("runc handler lost:\n%s", text)
	}
	if h := handlerOf(t, text, "io.containerd.grpc.v1.cri", "bulkhead"); h["runtime_type"] != ShimRuntimeType {
		t.Errorf("bulkhead handler missing:\n%s", text)
	}
	if _, err := c.Uninstall(); err != nil {
		t.Fatal(err)
	}
	text = read(t, c.Config)
	if handlerOf(t, text, "io.containerd.grpc.v1.cri", "bulkhead") != nil || handlerOf(t, text, "io.containerd.grpc.v1.cri", "runc") == nil {
		t.Errorf("after uninstall:\n%s", text)
	}
}

func TestContainerdRefusesWhatItCannotEdit(t *testing.T) {
	for name, content := range map[string]string{
		"version 1":  "[plugins.cri]\nsandbox_image = \"x\"\n",
		"not TOML":   "version = 2\n[plugins\n",
		"version 9":  "version = 9\n",
		"open block": "version = 2\n" + blockBegin + "\n",
	} {
		c := newContainerd(t, content)
		if _, err := c.Install(); err == nil {
			t.Errorf("%s: install accepted\n%s", name, content)
		}
		if read(t, c.Config) != content {
			t.Errorf("%s: file changed", name)
		}
	}
}

// FuzzContainerdInstall: whatever config.toml an administrator has, install
// either refuses it and writes nothing, or writes TOML holding the handler
// and every value the file had; uninstall then gives back an equal
// configuration.
func FuzzContainerdInstall(f *testing.F) {
	for _, seed := range []string{configV2, configV3, "", "version = 2\n", "version = 3\n[plugins]\n",
		"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nruntimes = {}\n",
		"version = 2\n# " + blockBegin + "\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		c := &Containerd{Config: path, Name: "bulkhead", Version: 3}
		var before map[string]any
		beforeErr := toml.Unmarshal([]byte(content), &before)
		res, err := c.Install()
		if err != nil {
			if read(t, path) != content {
				t.Fatalf("refused (%v) but the file changed", err)
			}
			return
		}
		if beforeErr != nil {
			t.Fatalf("installed into invalid TOML (%v):\n%q", beforeErr, content)
		}
		after := read(t, path)
		var tree map[string]any
		if err := toml.Unmarshal([]byte(after), &tree); err != nil {
			t.Fatalf("result is not TOML: %v\n%s", err, after)
		}
		doc, _ := c.parse([]byte(after))
		if h := runtimesOf(tree, doc.runtimesPath())["bulkhead"]; !same(h, c.handlers()["bulkhead"]) {
			t.Fatalf("no handler after install (%v):\n%s", res.Changes, after)
		}
		if _, err := c.Uninstall(); err != nil {
			t.Fatalf("uninstall: %v\n%s", err, after)
		}
		var back map[string]any
		if data, err := os.ReadFile(path); err == nil {
			if err := toml.Unmarshal(data, &back); err != nil {
				t.Fatalf("after uninstall: not TOML: %v", err)
			}
		}
		gone := map[string]map[string]any{"bulkhead": nil}
		if beforeDoc, err := c.parse([]byte(content)); err != nil {
			t.Fatalf("installed into a file it cannot parse: %v", err)
		} else if name, _ := c.formerGVisorHandler(beforeDoc); name != "" {
			gone[name] = nil
		}
		want := withRuntimes(before, doc.runtimesPath(), gone)
		if len(back) == 0 && len(before) <= 1 {
			return // a file install created is removed, or held only a version
		}
		if !same(back, want) && !same(back, pruneEmpty(want, doc.runtimesPath())) {
			t.Fatalf("uninstall did not give back the configuration:\nbefore %v\nback   %v", before, back)
		}
	})
}
