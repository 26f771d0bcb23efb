package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	units "github.com/docker/go-units"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/specs"
)

// Update clamps the requested resources to the container's profile and
// hands them to the backend as one JSON document: `docker update --memory
// 1g --pids-limit 100000` leaves the cgroup at the profile's ceilings.
func Update(g *Globals, v Values, id string) error {
	c, err := lookupRecorded(g, "update", id)
	var b *backend.Backend
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Not bulkhead's container: the backend decides, as it would alone.
		if b, _, _, err = owner(g, id); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		b = c.backend
	}
	if b.IsGVisor() {
		return fmt.Errorf("update %s: backend %s has no update verb", id, b.Name)
	}
	r, err := requestedResources(v)
	if err != nil {
		return err
	}
	if c != nil {
		if err := c.clampResources(id, r); err != nil {
			return err
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	path, err := memfdPath("bulkhead-resources", data)
	if err != nil {
		return err
	}
	if c != nil && c.profile.Mode == specs.Enforce {
		return updateVerified(g, c, r, path, id)
	}
	return execBackend(g.backendArgv(b, "update", "--resources", path, id))
}

// clampResources holds r to the container's profile and audits the
// decisions; audit mode records what enforcement would change, and
// changes nothing. A refused field fails the update in enforce mode.
func (c *recorded) clampResources(id string, r *rspec.LinuxResources) error {
	target := r
	if c.profile.Mode == specs.Audit {
		target = new(rspec.LinuxResources)
		data, _ := json.Marshal(r)
		_ = json.Unmarshal(data, target)
	}
	decisions, err := specs.ClampResources(&c.profile, target)
	if c.profile.Mode == specs.Enforce {
		// A caller asked for more than the profile gives: say what it
		// got, not only in the audit log.
		for _, d := range decisions {
			if d.Action == specs.Tightened {
				logrus.Warnf("bulkhead: update %s: %s %s held to %s (%s)", id, d.Field, d.Before, d.After, d.Why)
			}
		}
	}
	outcome := "update"
	if err != nil && c.profile.Mode == specs.Enforce {
		outcome = "refused"
	} else {
		err = nil
	}
	_ = audit.Write(c.cfg.AuditLog, &audit.Entry{Event: "update", ID: id, Profile: c.profile.Name, Backend: c.backend.Name,
		Mode: c.profile.Mode, Decisions: decisions, Outcome: outcome})
	return err
}

// requestedResources reads --resources (a file or "-" for stdin) or, like
// runc, the single-value flags when it is absent.
func requestedResources(v Values) (*rspec.LinuxResources, error) {
	r := &rspec.LinuxResources{Memory: &rspec.LinuxMemory{}, CPU: &rspec.LinuxCPU{}, Pids: &rspec.LinuxPids{}, BlockIO: &rspec.LinuxBlockIO{}}
	if in := v.String("resources"); in != "" {
		var src io.Reader = io.LimitReader(os.Stdin, specs.MaxSpecFile)
		if in != "-" {
			data, err := specs.ReadRegular(in, true)
			if err != nil {
				return nil, fmt.Errorf("update --resources: %w", err)
			}
			src = bytes.NewReader(data)
		}
		if err := specs.DecodeStrict(src, r); err != nil {
			return nil, fmt.Errorf("update --resources: %w", err)
		}
		return r, nil
	}
	if w := v.Int("blkio-weight"); w != 0 {
		weight := uint16(w)
		r.BlockIO.Weight = &weight
	}
	r.CPU.Cpus, r.CPU.Mems = v.String("cpuset-cpus"), v.String("cpuset-mems")
	for flag, dst := range map[string]**uint64{"cpu-period": &r.CPU.Period, "cpu-share": &r.CPU.Shares, "cpu-rt-period": &r.CPU.RealtimePeriod, "cpu-burst": &r.CPU.Burst} {
		if s := v.String(flag); s != "" {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("update --%s %q: %w", flag, s, err)
			}
			*dst = &n
		}
	}
	for flag, dst := range map[string]**int64{"cpu-quota": &r.CPU.Quota, "cpu-rt-runtime": &r.CPU.RealtimeRuntime, "cpu-idle": &r.CPU.Idle} {
		if s := v.String(flag); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("update --%s %q: %w", flag, s, err)
			}
			*dst = &n
		}
	}
	for flag, dst := range map[string]**int64{"memory": &r.Memory.Limit, "memory-swap": &r.Memory.Swap, "memory-reservation": &r.Memory.Reservation} {
		if s := v.String(flag); s != "" {
			n := int64(-1)
			if s != "-1" {
				var err error
				if n, err = units.RAMInBytes(s); err != nil {
					return nil, fmt.Errorf("update --%s %q: %w", flag, s, err)
				}
			}
			*dst = &n
		}
	}
	if v.IsSet("pids-limit") {
		n := int64(v.Int("pids-limit"))
		r.Pids.Limit = &n
	}
	return r, nil
}
