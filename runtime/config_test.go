package runtime

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
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
	for _, k := range tomlTags(reflect.TypeOf(Config{})) {
		if _, ok := raw[k]; !ok {
			t.Errorf("example does not document top-level key %s", k)
		}
	}
	backends, _ := raw["backends"].(map[string]any)
	for name := range got.Backends {
		b, _ := backends[name].(map[string]any)
		for _, k := range tomlTags(reflect.TypeOf(BackendConfig{})) {
			if _, ok := b[k]; !ok {
				t.Errorf("example does not document backends.%s.%s", name, k)
			}
		}
	}
	profiles, _ := raw["profiles"].(map[string]any)
	def, _ := profiles["default"].(map[string]any)
	for _, k := range tomlTags(reflect.TypeOf(specs.Profile{})) {
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

// A file's [profiles.default] reaches the built-in profiles, which keep
// only the keys their own tables set: hardening the default hardens
// gvisor and the job profiles, whether the file names them or not.
func TestConfigDefaultReachesBuiltinProfiles(t *testing.T) {
	cfg, err := LoadConfig(writeTestConfig(t, `
[profiles.default]
bind_roots = ["/srv"]
memory = "128m"
trusted = true
[profiles.install]
egress = ["pypi.org:443"]
`), true)
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := LoadConfig("", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"gvisor", "tests", "formatter", "install"} {
		p := cfg.Profiles[n]
		if !reflect.DeepEqual(p.BindRoots, []string{"/srv"}) {
			t.Errorf("%s: bind_roots %v, want the file's default's [/srv]", n, p.BindRoots)
		}
		if p.Selectable != builtin.Profiles[n].Selectable || p.Trusted != builtin.Profiles[n].Trusted {
			t.Errorf("%s: selectable %v trusted %v, want the built-in profile's", n, p.Selectable, p.Trusted)
		}
	}
	if got := cfg.Profiles["gvisor"].Memory; got != "128m" {
		t.Errorf("gvisor memory %s, want the file's default's 128m", got)
	}
	if got := cfg.Profiles["gvisor"].Backend; got != "runsc" {
		t.Errorf("gvisor backend %s, want its own runsc", got)
	}
	if got := cfg.Profiles["tests"].Memory; got != builtin.Profiles["tests"].Memory {
		t.Errorf("tests memory %s, want its own %s", got, builtin.Profiles["tests"].Memory)
	}
	if got := cfg.Profiles["install"].Egress; !reflect.DeepEqual(got, []string{"pypi.org:443"}) {
		t.Errorf("install egress %v, want the file's", got)
	}
}

// A profile whose own tmpfs mounts fit tmpfs_total only without an
// engine's 64m /dev/shm is refused when the file loads, naming the fix,
// not container by container with the caller blamed.
func TestConfigTmpfsTotalCountsEngineShm(t *testing.T) {
	_, err := LoadConfig(writeTestConfig(t, "[profiles.egtest]\nhome_size = \"64m\"\nscratch_size = \"64m\"\n"), true)
	if err == nil || !strings.Contains(err.Error(), "/dev/shm") || !strings.Contains(err.Error(), "raise tmpfs_total") {
		t.Fatalf("16m + 64m + 64m + /dev 64m + /dev/shm 64m in 256m: %v, want refused naming /dev/shm", err)
	}
	if _, err := LoadConfig(writeTestConfig(t, "[profiles.egtest]\nhome_size = \"64m\"\nscratch_size = \"64m\"\ntmpfs_total = \"320m\"\n"), true); err != nil {
		t.Fatalf("the same in 320m: %v", err)
	}
}

// TestConfigFilePlace: a root-owned 0644 file is not enough when a user
// may write a directory above it, or above the file a link there leads
// to: that user could put another configuration in its place.
func TestConfigFilePlace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own the file and chown its directory")
	}
	userDir := t.TempDir()
	if err := os.Chown(userDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	inUserDir := filepath.Join(userDir, "config.toml")
	if err := os.WriteFile(inUserDir, []byte("default_profile = \"default\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(inUserDir, true); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("a config in a directory uid 65534 owns: %v, want refused naming it", err)
	}
	link := filepath.Join(t.TempDir(), "config.toml")
	if err := os.Symlink(inUserDir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(link, true); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("a link to a config in a directory uid 65534 owns: %v, want refused naming it", err)
	}
	good := writeTestConfig(t, "default_profile = \"default\"\n")
	goodLink := filepath.Join(t.TempDir(), "config.toml")
	if err := os.Symlink(good, goodLink); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(goodLink, true); err != nil {
		t.Errorf("a link between root's directories: %v", err)
	}
}

// A link of another user's, in a sticky directory, is theirs to point at
// another configuration.
func TestConfigLinkOfAnother(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own the link")
	}
	good := writeTestConfig(t, "default_profile = \"default\"\n")
	sticky := t.TempDir()
	if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(sticky, "config.toml")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(link, true); err == nil || !strings.Contains(err.Error(), "a link of uid 65534") {
		t.Errorf("a link uid 65534 owns in a sticky directory: %v, want refused", err)
	}
}

// A link of another user's anywhere on the way, not only the last name,
// is theirs to point elsewhere, and every later open follows it again: a
// root's link to a user's link to root's file was taken, and the user
// chose the configuration read and the backend run as root.
func TestRootFileLinkChainOfAnother(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own the files and chown the user's directory")
	}
	good := writeTestConfig(t, "default_profile = \"default\"\n")
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Skip("runc not installed:", err)
	}
	userDir := t.TempDir()
	if err := os.Chown(userDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	admin := t.TempDir()
	for name, target := range map[string]string{"config.toml": good, "runc": runc} {
		users := filepath.Join(userDir, name)
		if err := os.Symlink(target, users); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(users, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(users, filepath.Join(admin, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadConfig(filepath.Join(admin, "config.toml"), true); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("a config reached through a link of uid 65534: %v, want refused naming it", err)
	}
	cfg := configOver(t, "[backends.runc]\npath = "+strconv.Quote(filepath.Join(admin, "runc"))+"\n")
	if b, err := cfg.ResolveBackend("runc"); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("a backend reached through a link of uid 65534 resolved to %v (%v), want refused naming it", b, err)
	}
	// Root's links all the way are taken, and what runs is the file judged.
	if err := os.Remove(filepath.Join(admin, "runc")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(runc, filepath.Join(admin, "runc")); err != nil {
		t.Fatal(err)
	}
	b, err := cfg.ResolveBackend("runc")
	if real, _ := filepath.EvalSymlinks(runc); err != nil || b.Path != real {
		t.Errorf("root's link to runc resolved to %v (%v), want %s run", b, err, real)
	}
}

// A key in another case is no key of the configuration: the decoder took
// PIDS_LIMIT for pids_limit, and a [Profiles.default] table replaced
// [profiles.default] whole.
// The built-in configuration is decoded without the key checks a file
// gets (decodeBuiltin): they hold here, and it decodes to what the checked
// path makes of it.
func TestBuiltinConfigKeysAreKnown(t *testing.T) {
	if err := knownKeys(builtinConfig, builtinName); err != nil {
		t.Fatal(err)
	}
	checked, err := decodeConfig(nil, builtinConfig, builtinName)
	if err != nil {
		t.Fatal(err)
	}
	unchecked, err := decodeBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(checked, unchecked) {
		t.Errorf("decodeBuiltin differs from decodeConfig of the same text")
	}
	if err := knownKeys([]byte("[profiles.default]\nPids_Limit = 16\n"), "test"); err == nil {
		t.Error("a key spelt in another case passed the checks the built-in configuration is spared")
	}
}

func TestConfigKeysExactlySpelt(t *testing.T) {
	for doc, want := range map[string]string{
		"[profiles.default]\npids_limit = 16\nPIDS_LIMIT = 4096\n":                    "profiles.default.PIDS_LIMIT",
		"[profiles.default]\nmemory = \"64m\"\n[Profiles.default]\nmemory = \"2g\"\n": "unknown key Profiles",
		"Default_Profile = \"default\"\n":                                             "unknown key Default_Profile",
		"[backends.runc]\nPath = \"runc\"\n":                                          "backends.runc.Path",
	} {
		if _, err := LoadConfig(writeTestConfig(t, doc), true); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want refused naming %s", doc, err, want)
		}
	}
}

// A path with ".." is checked by its text where the kernel goes up from
// wherever a link leads: not taken for the files bulkhead trusts.
func TestRootFilesTakeNoDotDot(t *testing.T) {
	good := writeTestConfig(t, "default_profile = \"default\"\n")
	dotdot := filepath.Dir(good) + "/x/../" + filepath.Base(good)
	if _, err := LoadConfig(dotdot, true); err == nil || !strings.Contains(err.Error(), `".."`) {
		t.Errorf("config %s: %v, want refused for its \"..\"", dotdot, err)
	}
	cfg := configOver(t, "[backends.runc]\npath = \"/usr/sbin/../sbin/runc\"\n")
	if _, err := cfg.ResolveBackend("runc"); err == nil || !strings.Contains(err.Error(), `".."`) {
		t.Errorf("backend path with ..: %v, want refused", err)
	}
}
