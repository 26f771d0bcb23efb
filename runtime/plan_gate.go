package runtime

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/specs"
)

// gateHanded runs the checks create and `bulkhead check` both make on the
// spec about to be handed over, in one place so that they cannot differ:
// the backend's own validation, and the profile's invariants
// (specs.CheckInvariantsContext), which hold whatever the rules did.
// The backend's validation includes the lookup of the command, which
// runc makes in its create and runsc only in start (specs.CommandMissing),
// so that check answers as create does on both; on runc, where the
// account files its init opens as root lie (specs.AccountFilesWritable).
// Both are validation of the spec; the kernel's side is verify.Container's.
func gateHanded(ctx *specs.Context, id, bundle string, handed *rspec.Spec, g *Globals, gvisor bool) (backendErr, invariantErr error) {
	backendErr = validateForBackend(id, bundle, handed, g)
	if backendErr == nil {
		if why := specs.CommandMissing(ctx, handed, gvisor); why != "" {
			when := "runc's create would fail"
			if gvisor {
				when = "runsc would fail in start, after create"
			}
			backendErr = fmt.Errorf("spec fails the backend's validation: process.args[0]: %s (%s); put the command in the image or give its full path", why, when)
		}
	}
	if backendErr == nil && !gvisor {
		if why := specs.AccountFilesWritable(ctx, handed); why != "" {
			backendErr = fmt.Errorf("spec fails the backend's validation: %s: runc's init opens it as root, with every capability and no seccomp filter, at create and at every exec, so the job would choose what it reads and could hold it there; make it a regular file of the image's read-only tree", why)
		}
	}
	ictx := ctx
	if gvisor && ctx.Profile.PidsLimit > 0 {
		// translatePidsForGVisor gave the host cgroup room for the
		// sandbox's own threads; the workload's limit is RLIMIT_NPROC.
		p := *ctx.Profile
		p.PidsLimit = backend.GVisorHostPids(p.PidsLimit)
		c := *ctx
		c.Profile = &p
		ictx = &c
	}
	return backendErr, specs.CheckInvariantsContext(ictx, handed)
}
