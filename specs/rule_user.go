package specs

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func ruleUser(c *Context, s *rspec.Spec) []Decision {
	return demoteUser(c.Profile, ensureProcess(s))
}

// demoteUser gives the process an identity the profile allows: root, and
// any id outside the profile's ranges, becomes the profile's uid or gid,
// and supplementary groups outside the ranges are dropped. Any id can own
// host files that a bind or a socket puts in reach (a host user's uid, the
// shadow group), so only ids the operator named are kept.
func demoteUser(prof *Profile, p *rspec.Process) []Decision {
	const why = "only the profile's ids: root owns the image and host-side files, and any other id may own host files in reach; file permissions (EACCES) hold the sandbox"
	u := &p.User
	ds := []Decision{
		idDecision("process.user.uid", &u.UID, prof.UID, prof.AllowedUIDs, why),
		idDecision("process.user.gid", &u.GID, prof.GID, prof.AllowedGIDs, why),
	}
	if prof.GID == 0 {
		return ds
	}
	var gids []uint32
	for _, g := range u.AdditionalGids {
		if g != 0 && allowedID(prof.GID, prof.AllowedGIDs, g) {
			gids = append(gids, g)
		}
	}
	if len(gids) != len(u.AdditionalGids) {
		ds = append(ds, Decision{Rule: "user", Field: "process.user.additionalGids", Action: Removed,
			Before: fmt.Sprint(u.AdditionalGids), After: fmt.Sprint(gids), Layer: LayerDAC,
			Why: "a supplementary group outside the profile's allowed_gids opens the host files of that group (group 0, shadow, docker)"})
		u.AdditionalGids = gids
	}
	return ds
}

func idDecision(field string, id *uint32, want uint32, ranges []string, why string) Decision {
	d := Decision{Rule: "user", Field: field, Action: Kept, Before: fmt.Sprint(*id),
		After: fmt.Sprint(*id), Layer: LayerDAC, Why: why}
	if want == 0 {
		return d // a profile that runs as root has no identity control
	}
	if *id == 0 || !allowedID(want, ranges, *id) {
		*id = want
		d.Action, d.After = Tightened, fmt.Sprint(want)
	}
	return d
}
