package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	bin   = "/usr/local/bin/bulkhead"
	runsc = "/usr/local/bin/bulkhead-runsc"
)

// original is a daemon.json as administrators write them: four-space
// indentation, keys in their own order, a runtime of their own.
const original = `{
    "log-driver": "json-file",
    "runtimes": {
        "crun": {
            "path": "/usr/bin/crun"
        }
    },
    "storage-driver": "overlay2",
    "default-ulimits": {"nofile": {"Name": "nofile", "Hard": 64000, "Soft": 64000}},
    "insecure-registries": ["10.0.0.1:5000"]
}
`

func newDocker(t *testing.T, content string) *Docker {
	t.Helper()
	path := filepath.Join(t.TempDir(), "daemon.json")
	if content != "" {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &Docker{Config: path, Name: "bulkhead", Binary: bin, Runsc: runsc}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func keysOf(t *testing.T, data string) []string {
	t.Helper()
	o, err := parseObject([]byte(data))
	if err != nil {
		t.Fatalf("result is not a JSON object: %v\n%s", err, data)
	}
	return o.keys
}

func TestInstallKeepsOtherKeysAndIsIdempotent(t *testing.T) {
	d := newDocker(t, original)
	res, err := d.Install()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 2 || !res.Written {
		t.Fatalf("changes %v, written %v; want 2 added runtimes", res.Changes, res.Written)
	}
	got := read(t, d.Config)
	if want := []string{"log-driver", "runtimes", "storage-driver", "default-ulimits", "insecure-registries"}; strings.Join(keysOf(t, got), ",") != strings.Join(want, ",") {
		t.Errorf("keys %v, want %v in that order", keysOf(t, got), want)
	}
	var doc struct {
		Runtimes map[string]struct {
			Path string `json:"path"`
		} `json:"runtimes"`
		Ulimits map[string]any `json:"default-ulimits"`
	}
	if err := json.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Runtimes["bulkhead"].Path != bin || doc.Runtimes["bulkhead-runsc"].Path != runsc || doc.Runtimes["crun"].Path != "/usr/bin/crun" {
		t.Errorf("runtimes %+v", doc.Runtimes)
	}
	if !strings.Contains(got, "\n    \"log-driver\"") {
		t.Errorf("the file's four-space indentation was not kept:\n%s", got)
	}
	if read(t, d.Config+BackupSuffix) != original {
		t.Errorf("backup is not the original file")
	}
	if st, _ := os.Stat(d.Config); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the original 0600", st.Mode().Perm())
	}

	res, err = d.Install()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 0 || res.Written || read(t, d.Config) != got {
		t.Errorf("second install changed %v", res.Changes)
	}
	if n := strings.Count(read(t, d.Config), `"bulkhead"`); n != 1 {
		t.Errorf("%d bulkhead entries after two installs", n)
	}

	if _, err := d.Uninstall(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, d.Config); got != original {
		t.Errorf("uninstall did not restore the file byte for byte:\n%s", got)
	}
	res, err = d.Uninstall()
	if err != nil || len(res.Changes) != 0 || res.Written {
		t.Errorf("second uninstall: %v %v", res.Changes, err)
	}
}

func TestInstallCreatesAndUninstallRemovesFile(t *testing.T) {
	d := newDocker(t, "")
	d.Runsc = ""
	d.Config = filepath.Join(filepath.Dir(d.Config), "docker", "daemon.json")
	if _, err := d.Install(); err != nil {
		t.Fatal(err)
	}
	got := read(t, d.Config)
	if want := "{\n  \"runtimes\": {\n    \"bulkhead\": {\n      \"path\": \"/usr/local/bin/bulkhead\"\n    }\n  }\n}\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(d.Config + BackupSuffix); err == nil {
		t.Errorf("a backup of a file that did not exist")
	}
	if _, err := d.Uninstall(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Config); !os.IsNotExist(err) {
		t.Errorf("daemon.json install created is still there: %v", err)
	}
}

func TestInstallDefaultRuntime(t *testing.T) {
	d := newDocker(t, `{"default-runtime": "runc", "debug": true}`)
	d.Default = true
	if _, err := d.Install(); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(read(t, d.Config)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["default-runtime"] != "bulkhead" || doc["debug"] != true {
		t.Errorf("doc %v", doc)
	}
	if _, err := d.Uninstall(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, d.Config); got != `{"default-runtime": "runc", "debug": true}` {
		t.Errorf("not restored: %s", got)
	}
}

func TestInstallUpdatesPathKeepsArgs(t *testing.T) {
	d := newDocker(t, `{"runtimes": {"bulkhead": {"path": "/old/bulkhead", "runtimeArgs": ["--profile", "ci"]}}}`)
	d.Runsc = ""
	res, err := d.Install()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Action != "changed" {
		t.Fatalf("changes %v", res.Changes)
	}
	if got := read(t, d.Config); !strings.Contains(got, `"--profile"`) || !strings.Contains(got, bin) || strings.Contains(got, "/old/") {
		t.Errorf("got %s", got)
	}
}

func TestInstallRefusesBadFiles(t *testing.T) {
	for name, content := range map[string]string{
		"invalid":   `{"runtimes": `,
		"array":     `[1, 2]`,
		"duplicate": `{"debug": true, "debug": false}`,
		"trailing":  `{} {}`,
		"runtimes":  `{"runtimes": []}`,
	} {
		t.Run(name, func(t *testing.T) {
			d := newDocker(t, content)
			if _, err := d.Install(); err == nil {
				t.Fatalf("install accepted %s", content)
			}
			if got := read(t, d.Config); got != content {
				t.Errorf("file changed to %s", got)
			}
		})
	}
}

func TestInstallDryRun(t *testing.T) {
	d := newDocker(t, original)
	d.DryRun = true
	res, err := d.Install()
	if err != nil {
		t.Fatal(err)
	}
	if res.Written || len(res.Changes) != 2 || !strings.Contains(string(res.After), bin) {
		t.Errorf("dry run: written %v changes %v", res.Written, res.Changes)
	}
	if read(t, d.Config) != original {
		t.Errorf("dry run wrote the file")
	}
	if _, err := os.Stat(d.Config + BackupSuffix); err == nil {
		t.Errorf("dry run wrote a backup")
	}
}

func TestInstallRefusesRelativePath(t *testing.T) {
	d := newDocker(t, "")
	d.Binary = "bulkhead"
	if _, err := d.Install(); err == nil {
		t.Fatal("a relative runtime path was accepted")
	}
}

func FuzzParseObject(f *testing.F) {
	f.Add([]byte(original))
	f.Add([]byte(`{"a":1,"b":{"c":[1,2,{"d":null}]}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"&":{"<a>":"b&c"}}`)) // keys and values come back unescaped
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := parseObject(data)
		if err != nil {
			return
		}
		out, err := o.render("  ")
		if err != nil {
			t.Fatalf("render of a parsed object: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("render is not JSON: %s", out)
		}
		if len(data) > 0 && json.Valid(data) && !sameJSON(out, data) {
			t.Fatalf("round trip changed the document:\n%s\n%s", data, out)
		}
	})
}
