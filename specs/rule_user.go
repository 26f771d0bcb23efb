package specs

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func ruleUser(c *Context, s *rspec.Spec) []Decision {
	return demoteUser(c.Profile, ensureProcess(s))
}

// demoteUser replaces root by the profile's identity. Any other uid is
// already unprivileged and kept, even one the profile does not name.
func demoteUser(prof *Profile, p *rspec.Process) []Decision {
	const why = "uid/gid 0 owns most of the image and host-side files; file permissions (EACCES) hold the sandbox"
	u := &p.User
	ds := []Decision{
		idDecision("process.user.uid", &u.UID, prof.UID, why),
		idDecision("process.user.gid", &u.GID, prof.GID, why),
	}
	if prof.GID == 0 {
		return ds
	}
	var gids []uint32
	for _, g := range u.AdditionalGids {
		if g != 0 {
			gids = append(gids, g)
		}
	}
	if len(gids) != len(u.AdditionalGids) {
		ds = append(ds, Decision{Rule: "user", Field: "process.user.additionalGids", Action: Removed,
			Before: fmt.Sprint(u.AdditionalGids), After: fmt.Sprint(gids), Layer: LayerDAC,
			Why: "supplementary group 0 opens every root-group-writable file"})
		u.AdditionalGids = gids
	}
	return ds
}

func idDecision(field string, id *uint32, want uint32, why string) Decision {
	d := Decision{Rule: "user", Field: field, Action: Kept, Before: fmt.Sprint(*id),
		After: fmt.Sprint(*id), Layer: LayerDAC, Why: why}
	if *id == 0 && want != 0 {
		*id = want
		d.Action, d.After = Tightened, fmt.Sprint(want)
	}
	return d
}
