package runtime

import (
	"encoding/json"
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/verify"
)

// updateVerified runs the backend's update as a child, then reads the
// container's cgroup and holds it to the profile's ceilings, lowered by
// the clamped request. On a mismatch it hands the backend the limits read
// before the update, so the container keeps what it had, and the error
// names the control.
func updateVerified(g *Globals, c *recorded, r *rspec.LinuxResources, resources, id string) error {
	pid := c.rec.InitPid
	if pid <= 0 {
		return fmt.Errorf("update %s: no init pid recorded to verify the cgroup by", id)
	}
	g0, err := cgroups.ForPID(pid)
	if err != nil {
		return fmt.Errorf("update %s: %w", id, err)
	}
	before, err := g0.Limits()
	if err != nil {
		return fmt.Errorf("update %s: %w", id, err)
	}
	b := c.backend
	status, err := backend.Run(g.backendArgv(b, "update", "--resources", resources, id), 0)
	if err == nil && status != 0 {
		err = &BackendError{Verb: "update", Status: status}
	}
	if err != nil {
		return err
	}
	e, err := verify.Expect(&c.profile, &rspec.Spec{Linux: &rspec.Linux{Resources: r}}, b.Kind())
	var rep verify.Report
	if err == nil {
		rep, err = verify.Cgroups(pid, e)
	}
	if err == nil {
		err = rep.Err()
	}
	if err == nil {
		return nil
	}
	rerr := restoreLimits(g, b, id, before)
	if rerr == nil {
		var after cgroups.Limits
		if after, rerr = g0.Limits(); rerr == nil && !sameLimits(after, before) {
			rerr = fmt.Errorf("the cgroup shows %+v, not the %+v it had", after, before)
		}
	}
	if rerr == nil {
		return fmt.Errorf("verification after update: %w (previous limits restored)", err)
	}
	// The limits cannot be trusted any more: nothing of the container may
	// run on under them.
	if kerr := backend.Quietly(g.backendArgv(b, "kill", "--all", id, "KILL")); kerr != nil {
		return fmt.Errorf("verification after update: %w; restoring the previous limits failed (%v) and so did killing the container: %v", err, rerr, kerr)
	}
	return fmt.Errorf("verification after update: %w; restoring the previous limits failed (%v): container killed", err, rerr)
}

func sameLimits(a, b cgroups.Limits) bool {
	return a.PidsMax == b.PidsMax && a.MemoryMax == b.MemoryMax && a.MemorySwapMax == b.MemorySwapMax &&
		a.CPUQuota == b.CPUQuota && a.CPUPeriod == b.CPUPeriod && a.CPUBurst == b.CPUBurst
}

// restoreLimits hands the backend the limits read before an update.
func restoreLimits(g *Globals, b *backend.Backend, id string, l cgroups.Limits) error {
	r := &rspec.LinuxResources{}
	if l.PidsMax > 0 {
		r.Pids = &rspec.LinuxPids{Limit: &l.PidsMax}
	}
	mem := &rspec.LinuxMemory{}
	if l.MemoryMax > 0 {
		mem.Limit = &l.MemoryMax
	}
	if l.MemorySwapMax > 0 {
		mem.Swap = &l.MemorySwapMax
	}
	if mem.Limit != nil || mem.Swap != nil {
		r.Memory = mem
	}
	if l.CPUQuota > 0 && l.CPUPeriod > 0 {
		period := uint64(l.CPUPeriod)
		r.CPU = &rspec.LinuxCPU{Quota: &l.CPUQuota, Period: &period}
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	path, err := memfdPath("bulkhead-resources-restore", data)
	if err != nil {
		return err
	}
	status, err := backend.Run(g.backendArgv(b, "update", "--resources", path, id), 0)
	if err == nil && status != 0 {
		err = &BackendError{Verb: "update", Status: status}
	}
	return err
}
