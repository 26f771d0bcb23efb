package specs

import (
	"encoding/json"
	"fmt"
	"reflect"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// ApplyProcess polices the process of `exec --process`: the engine takes
// its capabilities, user and environment from that file, not from
// config.json, so the process-level controls must hold there too. cwd is
// also resolved in the container: through c.LiveRoot, the running
// container's tree, when set, else in the rootfs and binds its
// (rewritten) config.json in c.Bundle names.
func ApplyProcess(c *Context, p *rspec.Process) (*rspec.Process, []Decision, error) {
	out, err := cloneProcess(p)
	if err != nil {
		return nil, nil, err
	}
	if ds := overlongLists(&rspec.Spec{Process: out}); len(ds) > 0 {
		return nil, ds, &RefusalError{Profile: c.Profile.Name, Decisions: ds}
	}
	var resolve func(string) (string, error)
	var mounts []rspec.Mount
	var containerRlimits []rspec.POSIXRlimit
	if c.Bundle != "" {
		s, _, err := Load(c.Bundle)
		if err != nil {
			return nil, nil, fmt.Errorf("exec: the container's config cannot be read: %w", err)
		}
		mounts = s.Mounts
		if s.Process != nil {
			containerRlimits = s.Process.Rlimits
		}
		if v := viewOf(c, s); v != nil && c.LiveRoot == "" {
			resolve = v.resolve
		}
	}
	if c.LiveRoot != "" {
		resolve = liveResolver(c.LiveRoot)
	}
	var ds []Decision
	ds = append(ds, refuseUnclassified(reflect.ValueOf(out), "process")...)
	ds = append(ds, dropCapabilities(out)...)
	ds = append(ds, forbidNewPrivileges(out)...)
	ds = append(ds, demoteUser(c.Profile, out)...)
	ds = append(ds, dropSecretEnv(c.Profile, out)...)
	ds = append(ds, proxyEnv(c.Profile, out)...)
	ds = append(ds, homeEnvOf(c.Profile, out, mounts)...)
	ds = append(ds, scratchEnvOf(c.Profile, out)...)
	ds = append(ds, checkCwd(out, resolve)...)
	ds = append(ds, clampRlimits(out)...)
	ds = append(ds, withinContainerRlimits(out, containerRlimits)...)
	ds = append(ds, raiseOOMScoreAdj(out)...)
	ds = append(ds, limitScheduling(out)...)
	ds = append(ds, checkLabels(c.Profile, out)...)
	if refused(ds) {
		return nil, ds, &RefusalError{Profile: c.Profile.Name, Decisions: ds}
	}
	return out, ds, nil
}

func cloneProcess(p *rspec.Process) (*rspec.Process, error) {
	if p == nil {
		return nil, fmt.Errorf("exec: no process")
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("exec: process: %w", err)
	}
	var out rspec.Process
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("exec: process: %w", err)
	}
	return &out, nil
}

// ClampResources holds an `update --resources` request to the profile's
// ceilings, under the same classification as create: a field create
// refuses (unified, realtime, net_cls) is refused here too, and the error
// says so. Values the request leaves out stay as they are in the
// container, which create already clamped.
func ClampResources(p *Profile, r *rspec.LinuxResources) ([]Decision, error) {
	if ds := overlongLists(&rspec.Spec{Linux: &rspec.Linux{Resources: r}}); len(ds) > 0 {
		return ds, &RefusalError{Profile: p.Name, Decisions: ds}
	}
	var ds []Decision
	ds = append(ds, refuseUnclassified(reflect.ValueOf(r), "linux.resources")...)
	ds = append(ds, clampPids(p, r, true)...)
	ds = append(ds, clampMemory(p, r, true)...)
	ds = append(ds, clampShares(p, r)...)
	ds = append(ds, clampCPU(p, r, true)...)
	ds = append(ds, clampBlockIO(r)...)
	ds = append(ds, checkHugepageLimits(r)...)
	if refused(ds) {
		return ds, &RefusalError{Profile: p.Name, Decisions: ds}
	}
	return ds, nil
}
