package runtime

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/pelletier/go-toml/v2"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/runtime/workspace"
	"bulkhead.dev/bulkhead/specs"
)

// DefaultConfigPath is read when neither --config nor BULKHEAD_CONFIG names
// another file. Its absence is fine: the built-in configuration applies.
const DefaultConfigPath = "/etc/bulkhead/config.toml"

//go:embed default.toml
var builtinConfig []byte

// BackendConfig is one [backends.<name>] table.
type BackendConfig struct {
	Path string   `toml:"path"`
	Args []string `toml:"args"`
	// Kind is the runtime path runs (runc, runsc or crun) where neither
	// the backend's name nor its binary's says it.
	Kind string `toml:"kind"`
}

// Config is bulkhead's configuration: the built-in one with the
// administrator's file on top.
type Config struct {
	DefaultProfile string                   `toml:"default_profile"`
	AuditLog       string                   `toml:"audit_log"`
	Backends       map[string]BackendConfig `toml:"backends"`
	Profiles       map[string]specs.Profile `toml:"profiles"`
	// ChangesDir keeps workspace changes after delete, for
	// ChangesRetention (a Go duration); see runtime/workspace.
	ChangesDir       string `toml:"changes_dir"`
	ChangesRetention string `toml:"changes_retention"`
	// What one container's changes may make bulkhead read or keep, and
	// what all kept changes may take of changes_dir; see runtime/workspace/changes_limits.go.
	ChangesMaxBytes string `toml:"changes_max_bytes"`
	ChangesMaxFiles int    `toml:"changes_max_files"`
	ChangesMaxDepth int    `toml:"changes_max_depth"`
	ChangesQuota    string `toml:"changes_quota"`

	// builtinTables are the built-in profiles as default.toml writes
	// them, so that a file's [profiles.default] reaches each of them.
	builtinTables map[string]map[string]any
}

// rebuildBuiltins lays each built-in profile's table over c's default
// profile, keeping the built-in selectable and trusted of base.
func (c *Config) rebuildBuiltins(base *Config, name string) error {
	for n, bt := range c.builtinTables {
		if n == "default" {
			continue
		}
		start := c.Profiles["default"]
		start.Selectable, start.Trusted = base.Profiles[n].Selectable, base.Profiles[n].Trusted
		rebuilt, err := overlayProfile(start, bt)
		if err != nil {
			return fmt.Errorf("config %s: built-in profile %s on the file's default: %w", name, n, err)
		}
		rebuilt.Name = n
		c.Profiles[n] = rebuilt
	}
	return nil
}

// fileConfig mirrors Config with profiles decoded as raw tables, so a
// profile in the administrator's file can start from the default profile
// and override only the keys it names.
type fileConfig struct {
	DefaultProfile   string                    `toml:"default_profile"`
	AuditLog         string                    `toml:"audit_log"`
	Backends         map[string]BackendConfig  `toml:"backends"`
	Profiles         map[string]map[string]any `toml:"profiles"`
	ChangesDir       string                    `toml:"changes_dir"`
	ChangesRetention string                    `toml:"changes_retention"`
	ChangesMaxBytes  string                    `toml:"changes_max_bytes"`
	ChangesMaxFiles  int                       `toml:"changes_max_files"`
	ChangesMaxDepth  int                       `toml:"changes_max_depth"`
	ChangesQuota     string                    `toml:"changes_quota"`
}

// LoadConfig returns the built-in configuration overlaid with the file at
// path. A missing file at the default path is not an error; a missing file
// that was named explicitly is.
func LoadConfig(path string, explicit bool) (*Config, error) {
	cfg, err := decodeBuiltin()
	if err != nil {
		return nil, err
	}
	if path == "" {
		return cfg, nil
	}
	data, err := readConfigFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return cfg, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeConfig(cfg, data, path)
}

// readConfigFile refuses a file that anyone but root could have written,
// or put another file in place of: the file decides the boundary, so its
// integrity is part of it. Every directory above the path as named and
// above the file a link there leads to must be root's alone
// (specs.RootPlace), or a user who may write one could swap the file.
func readConfigFile(path string) ([]byte, error) {
	real, why, err := specs.RootPlace(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if why != "" {
		return nil, fmt.Errorf("config %s: %s can be changed by others than root, who could put another file in its place; keep the file where only root may change it", path, why)
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
		return nil, fmt.Errorf("config %s: owned by uid %d, must be owned by root", path, sys.Uid)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("config %s: mode %04o lets others than root write it; run chmod go-w %s", path, st.Mode().Perm(), path)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

// decodeConfig decodes data strictly onto base (nil for none).
func decodeConfig(base *Config, data []byte, name string) (*Config, error) {
	if err := knownKeys(data, name); err != nil {
		return nil, err
	}
	return decodeKnown(base, data, name)
}

// decodeBuiltin is decodeConfig of the built-in configuration, whose keys
// its tests check (TestBuiltinConfigKeysAreKnown): those two passes over
// the text were a quarter of what every verb spent on its configuration.
func decodeBuiltin() (*Config, error) {
	return decodeKnown(nil, builtinConfig, builtinName)
}

const builtinName = "built-in configuration"

// knownKeys refuses a key the configuration does not know: the typed pass
// finds unknown keys with their line, the exact pass keys that differ
// from a known one only in case, which the typed pass takes for it.
func knownKeys(data []byte, name string) error {
	var typed Config
	if err := strictUnmarshal(data, &typed); err != nil {
		return fmt.Errorf("config %s: %w", name, err)
	}
	if err := exactKeys(data); err != nil {
		return fmt.Errorf("config %s: %w", name, err)
	}
	return nil
}

// decodeKnown is decodeConfig of a text whose keys are known: the raw pass
// tells which profile keys the file sets.
func decodeKnown(base *Config, data []byte, name string) (*Config, error) {
	var fc fileConfig
	if err := toml.Unmarshal(data, &fc); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	cfg := &Config{Backends: map[string]BackendConfig{}, Profiles: map[string]specs.Profile{}}
	if base != nil {
		*cfg = *base
		cfg.Backends = maps.Clone(base.Backends)
		cfg.Profiles = maps.Clone(base.Profiles)
	}
	if fc.DefaultProfile != "" {
		cfg.DefaultProfile = fc.DefaultProfile
	}
	if fc.AuditLog != "" {
		cfg.AuditLog = fc.AuditLog
	}
	if fc.ChangesDir != "" {
		cfg.ChangesDir = fc.ChangesDir
	}
	if fc.ChangesRetention != "" {
		cfg.ChangesRetention = fc.ChangesRetention
	}
	if fc.ChangesMaxBytes != "" {
		cfg.ChangesMaxBytes = fc.ChangesMaxBytes
	}
	if fc.ChangesMaxFiles != 0 {
		cfg.ChangesMaxFiles = fc.ChangesMaxFiles
	}
	if fc.ChangesMaxDepth != 0 {
		cfg.ChangesMaxDepth = fc.ChangesMaxDepth
	}
	if fc.ChangesQuota != "" {
		cfg.ChangesQuota = fc.ChangesQuota
	}
	for n, b := range fc.Backends {
		if n == state.DirName {
			return nil, fmt.Errorf("config %s: backend name %q is reserved for bulkhead's own state", name, n)
		}
		cfg.Backends[n] = b
	}
	// The default profile is decoded first: every other profile starts
	// from it, the built-in ones too. A file that sets [profiles.default]
	// rebuilds each built-in profile on it from the built-in table, so
	// that what the file tightens there reaches them.
	if base == nil {
		cfg.builtinTables = fc.Profiles
	}
	if t, ok := fc.Profiles["default"]; ok {
		p, err := overlayProfile(cfg.Profiles["default"], t)
		if err != nil {
			return nil, fmt.Errorf("config %s: profile default: %w", name, err)
		}
		p.Name = "default"
		cfg.Profiles["default"] = p
		if base != nil {
			if err := cfg.rebuildBuiltins(base, name); err != nil {
				return nil, err
			}
		}
	}
	names := make([]string, 0, len(fc.Profiles))
	for n := range fc.Profiles {
		if n != "default" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		start, ok := cfg.Profiles[n]
		if !ok {
			start = cfg.Profiles["default"]
			start.Selectable = false
			start.Trusted = false
		}
		p, err := overlayProfile(start, fc.Profiles[n])
		if err != nil {
			return nil, fmt.Errorf("config %s: profile %s: %w", name, n, err)
		}
		p.Name = n
		cfg.Profiles[n] = p
	}
	return cfg, cfg.validate(name)
}

func overlayProfile(p specs.Profile, table map[string]any) (specs.Profile, error) {
	data, err := toml.Marshal(table)
	if err != nil {
		return p, err
	}
	err = strictUnmarshal(data, &p)
	return p, err
}

func strictUnmarshal(data []byte, v any) error {
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		// One line naming every unknown key and its line: a refusal is the
		// last line the engine shows.
		var msgs []string
		for _, e := range strict.Errors {
			row, col := e.Position()
			msgs = append(msgs, fmt.Sprintf("line %d column %d: unknown key %s", row, col, strings.Join(e.Key(), ".")))
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	var derr *toml.DecodeError
	if errors.As(err, &derr) {
		row, col := derr.Position()
		return fmt.Errorf("line %d column %d: %s", row, col, derr.Error())
	}
	return err
}

func (c *Config) validate(name string) error {
	if _, ok := c.Profiles[c.DefaultProfile]; !ok {
		return fmt.Errorf("config %s: default_profile %q is not defined", name, c.DefaultProfile)
	}
	for n, p := range c.Profiles {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("config %s: %w", name, err)
		}
		if _, ok := c.Backends[p.Backend]; !ok {
			return fmt.Errorf("config %s: profile %s: backend %q is not defined under [backends]", name, n, p.Backend)
		}
	}
	if err := c.validateBrokerUsers(); err != nil {
		return fmt.Errorf("config %s: %w", name, err)
	}
	for n, b := range c.Backends {
		if b.Path == "" {
			return fmt.Errorf("config %s: backends.%s: path is empty", name, n)
		}
		if strings.Contains(b.Path, "/") && !filepath.IsAbs(b.Path) {
			return fmt.Errorf("config %s: backends.%s: path %q: give an absolute path, or a bare name found in %s", name, n, b.Path, SystemPath)
		}
		if _, err := backend.KindOf(n, b.Path, b.Kind); err != nil {
			return fmt.Errorf("config %s: backends.%s: %w", name, n, err)
		}
	}
	if _, err := workspace.LimitsOf(c.changes()); err != nil {
		return fmt.Errorf("config %s: %w", name, err)
	}
	return nil
}

// validateBrokerUsers refuses an egress_broker_user that any profile's
// jobs may run as, not only its own profile's: brokers of every profile
// run as their user on one host, and a job of another profile running as
// that uid could signal or trace them, or as that gid reach their files.
func (c *Config) validateBrokerUsers() error {
	names := slices.Sorted(maps.Keys(c.Profiles))
	for _, bn := range names {
		broker := c.Profiles[bn]
		uid, gid, err := broker.EgressBrokerIDs()
		if err != nil {
			return fmt.Errorf("profile %s: %w", bn, err)
		}
		for _, jn := range names {
			job := c.Profiles[jn]
			if job.JobMayUseUID(uid) {
				return fmt.Errorf("profile %s: egress_broker_user %q: profile %s lets its jobs run as uid %d", bn, broker.EgressBrokerUser, jn, uid)
			}
			if job.JobMayUseGID(gid) {
				return fmt.Errorf("profile %s: egress_broker_user %q: profile %s lets its jobs run as gid %d", bn, broker.EgressBrokerUser, jn, gid)
			}
		}
	}
	return nil
}

// ResolveBackend finds the binary of the named backend: an absolute path
// as is, a bare name in SystemPath's directories (never the caller's PATH).
func (c *Config) ResolveBackend(name string) (*backend.Backend, error) {
	bc, ok := c.Backends[name]
	if !ok {
		return nil, fmt.Errorf("unknown backend %q: configured backends are %s", name, strings.Join(slices.Sorted(maps.Keys(c.Backends)), ", "))
	}
	path, err := lookSystemPath(bc.Path)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	// bulkhead runs it as root with every container's spec: a binary a
	// user could change, or replace, would be that user's runtime. The
	// file judged is the one run, never the path as named again.
	real, why, err := specs.RootFile(path)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	if why != "" {
		return nil, fmt.Errorf("backend %s: %s can be changed by others than root; install it where only root may change it", name, why)
	}
	// The kind is the one the configuration says (validate), and the
	// file a link leads to must not say another.
	kind, err := backend.KindOf(name, path, bc.Kind)
	if err == nil {
		_, err = backend.KindOf(name, real, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("backend %s: %s: %w", name, real, err)
	}
	b := &backend.Backend{Name: name, Path: real, Args: bc.Args, Declared: kind}
	if b.IsGVisor() {
		if why := backend.GVisorFlagRefusal(bc.Args); why != "" {
			return nil, fmt.Errorf("backend %s: args: %s: %w", name, why, backend.ErrGVisorFlags)
		}
	}
	return b, nil
}

// lookSystemPath is exec.LookPath over SystemPath.
func lookSystemPath(file string) (string, error) {
	if strings.Contains(file, "/") {
		return exec.LookPath(file)
	}
	for _, dir := range filepath.SplitList(SystemPath) {
		if p, err := exec.LookPath(filepath.Join(dir, file)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q is not an executable in %s", file, SystemPath)
}
