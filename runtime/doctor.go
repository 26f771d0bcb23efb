package runtime

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/doctor"
)

// Doctor judges whether this host can hold the boundary: the configuration
// file, each configured backend (found, runs, version, known escape CVEs),
// the kernel features and cgroup controllers bulkhead relies on, the
// directories it keeps state and audit records in, the engines'
// registrations and, with opt.Live, one verified container per backend.
// It never stops at the first failure: every check gets its line.
func Doctor(ctx context.Context, g *Globals, opt doctor.Options) *doctor.Report {
	if opt.Changelog == nil {
		opt.Changelog = doctor.DistroChangelog
	}
	r := &doctor.Report{}
	cfg, cfgCheck := doctorConfig(g)
	r.Add(cfgCheck)
	names := slices.Sorted(maps.Keys(cfg.Backends))
	if opt.Backend != "" {
		if _, ok := cfg.Backends[opt.Backend]; !ok {
			r.Add(doctor.Check{Name: "backend " + opt.Backend, Status: doctor.StatusFail, Looked: "[backends] of the configuration",
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
			r.Add(c)
		}
		if b != nil {
			usable = append(usable, b)
		}
	}
	for _, c := range doctor.Host(cfg.Profiles[cfg.DefaultProfile], opt.Cgroups) {
		r.Add(c)
	}
	for _, c := range doctor.Dirs(g.Root, cfg.AuditLog, cfg.ChangesDir) {
		r.Add(c)
	}
	for _, c := range doctor.Engines(opt) {
		r.Add(c)
	}
	if opt.Live {
		for _, b := range usable {
			r.Add(doctorLive(ctx, g, opt, b.Name))
		}
	}
	return r
}

// doctorConfig loads the configuration as create would and judges its
// file. When the file is refused, the built-in configuration stands in so
// the other checks still run; create would refuse every container.
func doctorConfig(g *Globals) (*Config, doctor.Check) {
	c := doctor.Check{Name: "config file", Looked: g.Config}
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
		c.Status, c.Found = doctor.StatusOK, "no file: the built-in configuration applies"
		return builtin, c
	}
	st, err := os.Stat(g.Config)
	if os.IsNotExist(err) && !g.explicit {
		c.Status, c.Found = doctor.StatusOK, "absent: the built-in configuration applies"
		return builtin, c
	}
	if err == nil {
		c.Found = fmt.Sprintf("mode %04o, %s", st.Mode().Perm(), doctor.OwnerOf(st))
	}
	cfg, err := g.LoadConfig()
	if err != nil {
		c.Status, c.Found = doctor.StatusFail, err.Error()
		c.Fix = "create refuses every container until this is fixed: make the file root's and writable only by root (chown root:root; chmod 0644), or correct the key named"
		return builtin, c
	}
	c.Status = doctor.StatusOK
	c.Found += ", loads"
	return cfg, c
}

// backendChecks checks the configured backend name (doctor.Backend).
func backendChecks(cfg *Config, name string, changelog func(string) (*doctor.Changelog, error)) (*backend.Backend, []doctor.Check) {
	resolve := func() (*backend.Backend, error) { return cfg.ResolveBackend(name) }
	return doctor.Backend(name, cfg.Backends[name].Path, profilesUsing(cfg, name), resolve, changelog)
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
