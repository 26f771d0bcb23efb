package runtime

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"bulkhead.dev/bulkhead/specs"
)

const exampleConfig = "../docs/config.example.toml"

// installExample copies the documented example where LoadConfig accepts
// it (root-owned, 0644), whoever owns the checkout.
func installExample(t *testing.T) (string, []byte) {
	t.Helper()
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	return writeTestConfig(t, string(data)), data
}

func tomlKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if tag != "" && tag != "-" {
			keys = append(keys, tag)
		}
	}
	return keys
}

// TestExampleConfig: docs/config.example.toml parses strictly with the
// loader, changes nothing against the built-in configuration, and sets
// every key the loader knows, so the documentation cannot fall behind a
// new field of specs.Profile.
func TestExampleConfig(t *testing.T) {
	path, data := installExample(t)
	got, err := LoadConfig(path, true)
	if err != nil {
		t.Fatalf("example does not load: %v", err)
	}
	builtin, err := LoadConfig("", false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, builtin) {
		t.Errorf("example differs from the built-in defaults:\nexample  %+v\nbuilt-in %+v", got, builtin)
	}
	p, want := got.Profiles["default"], specs.DefaultProfile()
	if len(p.Workspaces) == 0 {
		p.Workspaces = nil // [] in TOML, nil in Go: both are none
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("example's default profile is not specs.DefaultProfile (DESIGN's defaults):\n%+v\n%+v", p, want)
	}

	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range tomlKeys(reflect.TypeOf(Config{})) {
		if _, ok := raw[k]; !ok {
			t.Errorf("example does not document top-level key %s", k)
		}
	}
	backends, _ := raw["backends"].(map[string]any)
	for name := range got.Backends {
		b, _ := backends[name].(map[string]any)
		for _, k := range tomlKeys(reflect.TypeOf(BackendConfig{})) {
			if _, ok := b[k]; !ok {
				t.Errorf("example does not document backends.%s.%s", name, k)
			}
		}
	}
	profiles, _ := raw["profiles"].(map[string]any)
	def, _ := profiles["default"].(map[string]any)
	for _, k := range tomlKeys(reflect.TypeOf(specs.Profile{})) {
		if _, ok := def[k]; !ok {
			t.Errorf("example does not document profiles.default.%s", k)
		}
		if !hasCommentBefore(string(data), k) {
			t.Errorf("profiles.default.%s has no comment explaining it", k)
		}
	}
}

// hasCommentBefore reports whether the line setting key follows a comment,
// directly or through other keys the same comment explains (uid, gid).
func hasCommentBefore(doc, key string) bool {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, key+" = ") {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			switch {
			case strings.HasPrefix(lines[j], "#"):
				return true
			case strings.Contains(lines[j], " = ") && !strings.HasPrefix(lines[j], "["):
				continue
			}
			break
		}
	}
	return false
}

func TestConfigUnknownKey(t *testing.T) {
	tests := []struct {
		name, content, key, line string
	}{
		{"top level", "default_profile = \"default\"\naudit_logs = \"/tmp/x\"\n", "audit_logs", "line 2"},
		{"backend", "[backends.runc]\npath = \"runc\"\nargz = []\n", "backends.runc.argz", "line 3"},
		{"profile", "[profiles.ci]\nmode = \"enforce\"\n\npid_limit = 10\n", "profiles.ci.pid_limit", "line 4"},
		{"default profile", "[profiles.default]\nmemroy = \"1g\"\n", "profiles.default.memroy", "line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeTestConfig(t, tc.content), true)
			if err == nil {
				t.Fatal("unknown key accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.line+" column 1: unknown key "+tc.key) {
				t.Fatalf("error does not name %s at %s: %v", tc.key, tc.line, err)
			}
		})
	}
}

func TestConfigFileOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own the file and chown it")
	}
	tests := []struct {
		name string
		mode os.FileMode
		uid  int
		want string // "" means accepted
	}{
		{"root 0644", 0o644, 0, ""},
		{"root 0600", 0o600, 0, ""},
		{"group writable", 0o664, 0, "mode 0664 lets others than root write it"},
		{"others writable", 0o646, 0, "mode 0646 lets others than root write it"},
		{"world writable", 0o666, 0, "mode 0666"},
		{"not root's", 0o644, 65534, "owned by uid 65534, must be owned by root"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTestConfig(t, "default_profile = \"default\"\n")
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, tc.uid, 0); err != nil {
				t.Fatal(err)
			}
			_, err := LoadConfig(path, true)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestConfigMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.toml")
	if _, err := LoadConfig(missing, false); err != nil {
		t.Fatalf("absent default path: %v", err)
	}
	if _, err := LoadConfig(missing, true); err == nil {
		t.Fatal("an explicitly named missing file was accepted")
	}
}

// TestConfigErrorNamesFile: a refusal names the file to fix, whatever the
// key it is about.
func TestConfigErrorNamesFile(t *testing.T) {
	for name, content := range map[string]string{
		"reserved backend":  "[backends.bulkhead]\npath = \"runc\"\n",
		"undefined backend": "[profiles.ci]\nbackend = \"nope\"\n",
		"bad profile":       "[profiles.ci]\nmemory = \"lots\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := writeTestConfig(t, content)
			_, err := LoadConfig(path, true)
			if err == nil || !strings.HasPrefix(err.Error(), "config "+path+": ") {
				t.Fatalf("error %v does not start with the file's name %s", err, path)
			}
		})
	}
}

// TestConfigCgroupParents: a profile's cgroup_parents is inherited from
// the default profile and must name clean absolute groups; "/" would
// declare every group shared, and /bulkhead holds bulkhead's own.
func TestConfigCgroupParents(t *testing.T) {
	cfg, err := LoadConfig(writeTestConfig(t, "[profiles.ci]\nmode = \"enforce\"\n"), true)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Profiles["ci"].CgroupParents; !reflect.DeepEqual(got, specs.DefaultCgroupParents) {
		t.Fatalf("inherited cgroup_parents %v, want %v", got, specs.DefaultCgroupParents)
	}
	for _, bad := range []string{`"/"`, `"docker"`, `"/docker/"`, `"/a/../b"`, `"/bulkhead"`, `"/bulkhead/x"`, `"system.slice:a:b"`,
		`"/kubepods-burstable.slice"`, `"/kubepods.slice/burstable.slice"`, `"/a--b.slice"`, `"/system.slice/docker-1.scope"`} {
		_, err := LoadConfig(writeTestConfig(t, "[profiles.ci]\ncgroup_parents = ["+bad+"]\n"), true)
		if err == nil || !strings.Contains(err.Error(), "cgroup_parents") {
			t.Errorf("cgroup_parents = [%s]: %v, want refused", bad, err)
		}
	}
}

// A bad egress entry is refused in one line naming the file, the profile,
// the key and the entry.
func TestConfigEgressRefusal(t *testing.T) {
	path := writeTestConfig(t, "[profiles.install]\negress = [\"registry.npmjs.org:443\", \"pypi.org\"]\n")
	_, err := LoadConfig(path, true)
	want := "config " + path + `: profile install: egress "pypi.org": want host:port`
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line starting %q", err, want)
	}
	if _, err := LoadConfig(writeTestConfig(t, "[profiles.install]\negress = [\"*.npmjs.org:443\"]\n"), true); err != nil {
		t.Fatalf("a good list refused: %v", err)
	}
}

// egress_broker_user is refused when any profile, not only its own, lets
// its jobs run as that uid or gid: one line naming the file, both
// profiles and the id.
func TestConfigEgressBrokerUserOfAnotherProfile(t *testing.T) {
	for _, c := range []struct{ content, want string }{
		{"[profiles.build]\nallowed_uids = [\"60000-70000\"]\negress_broker_user = \"50000:50000\"\n",
			`: profile default: egress_broker_user "65532:65532": profile build lets its jobs run as uid 65532`},
		{"[profiles.install]\negress_broker_user = \"60001:60001\"\n[profiles.build]\nuid = 60001\n",
			`: profile install: egress_broker_user "60001:60001": profile build lets its jobs run as uid 60001`},
		{"[profiles.install]\negress_broker_user = \"60001:60002\"\n[profiles.build]\nallowed_gids = [\"60002\"]\n",
			`: profile install: egress_broker_user "60001:60002": profile build lets its jobs run as gid 60002`},
	} {
		path := writeTestConfig(t, c.content)
		_, err := LoadConfig(path, true)
		if err == nil || !strings.HasPrefix(err.Error(), "config "+path+": ") || !strings.Contains(err.Error(), c.want) ||
			strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line starting with the file and saying %q", c.content, err, c.want)
		}
	}
	// Broker and job ids apart across profiles are fine.
	ok := "[profiles.install]\negress_broker_user = \"60001:60001\"\n[profiles.build]\nallowed_uids = [\"1000-2000\"]\nallowed_gids = [\"1000-2000\"]\n"
	if _, err := LoadConfig(writeTestConfig(t, ok), true); err != nil {
		t.Fatalf("separate ids refused: %v", err)
	}
}
