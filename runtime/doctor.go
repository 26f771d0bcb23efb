package runtime

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"bulkhead.dev/bulkhead/runtime/backend"
)

// Doctor judges whether this host can hold the boundary: the configuration
// file, each configured backend (found, runs, version, known escape CVEs),
// the kernel features and cgroup controllers bulkhead relies on, the
// directories it keeps state and audit records in, the engines'
// registrations and, with opt.Live, one verified container per backend.
// It never stops at the first failure: every check gets its line.
func Doctor(ctx context.Context, g *Globals, opt DoctorOptions) *DoctorReport {
	if opt.Changelog == nil {
		opt.Changelog = distroChangelog
	}
	r := &DoctorReport{}
	cfg, cfgCheck := doctorConfig(g)
	r.add(cfgCheck)
	names := slices.Sorted(maps.Keys(cfg.Backends))
	if opt.Backend != "" {
		if _, ok := cfg.Backends[opt.Backend]; !ok {
			r.add(DoctorCheck{Name: "backend " + opt.Backend, Status: StatusFail, Looked: "[backends] of the configuration",
				Found: "not configured; configured backends are " + strings.Join(names, ", "),
				Fix:   "name one of those with --backend, or add [backends." + opt.Backend + "] with its path"})
			names = nil
		} else {
			names = []string{opt.Backend}
		}
	}
	var usable []*backend.Backend
	for _, name := range names {
		b, checks := backendChecks(cfg, name, opt.Changelog)
		for _, c := range checks {
			r.add(c)
		}
		if b != nil {
			usable = append(usable, b)
		}
	}
	for _, c := range doctorHost(cfg.Profiles[cfg.DefaultProfile], opt.Cgroups) {
		r.add(c)
	}
	for _, c := range doctorDirs(g.Root, cfg.AuditLog, cfg.ChangesDir) {
		r.add(c)
	}
	for _, c := range doctorEngines(opt) {
		r.add(c)
	}
	if opt.Live {
		for _, b := range usable {
			r.add(doctorLive(ctx, g, opt, b.Name))
		}
	}
	return r
}

// doctorConfig loads the configuration as create would and judges its
// file. When the file is refused, the built-in configuration stands in so
// the other checks still run; create would refuse every container.
func doctorConfig(g *Globals) (*Config, DoctorCheck) {
	c := DoctorCheck{Name: "config file", Looked: g.Config}
	if g.Config == "" {
		c.Looked = "(none)"
	}
	builtin, err := LoadConfig("", false)
	if err != nil {
		// The embedded configuration is part of the binary; it failing
		// to load is a build defect, not a host problem.
		panic(err)
	}
	if g.Config == "" {
		c.Status, c.Found = StatusOK, "no file: the built-in configuration applies"
		return builtin, c
	}
	st, err := os.Stat(g.Config)
	if os.IsNotExist(err) && !g.explicit {
		c.Status, c.Found = StatusOK, "absent: the built-in configuration applies"
		return builtin, c
	}
	if err == nil {
		c.Found = fmt.Sprintf("mode %04o, %s", st.Mode().Perm(), ownerOf(st))
	}
	cfg, err := g.LoadConfig()
	if err != nil {
		c.Status, c.Found = StatusFail, err.Error()
		c.Fix = "create refuses every container until this is fixed: make the file root's and writable only by root (chown root:root; chmod 0644), or correct the key named"
		return builtin, c
	}
	c.Status = StatusOK
	c.Found += ", loads"
	return cfg, c
}

// backendChecks checks the configured backend name (doctorBackend).
func backendChecks(cfg *Config, name string, changelog func(string) (*Changelog, error)) (*backend.Backend, []DoctorCheck) {
	resolve := func() (*backend.Backend, error) { return cfg.ResolveBackend(name) }
	return doctorBackend(name, cfg.Backends[name].Path, profilesUsing(cfg, name), resolve, changelog)
}

func profilesUsing(cfg *Config, name string) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		if cfg.Profiles[n].Backend == name {
			out = append(out, n)
		}
	}
	return out
}
