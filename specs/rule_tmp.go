package specs

import (
	"fmt"
	"strings"

	units "github.com/docker/go-units"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func ruleTmp(c *Context, s *rspec.Spec) []Decision {
	const rule, field = "tmp", "mounts[/tmp]"
	prof := c.Profile
	size, err := prof.TmpBytes()
	if err != nil {
		return []Decision{{Rule: rule, Field: field, Action: Refused, Layer: LayerNone,
			Why: "profile: " + err.Error()}}
	}
	sizeOpt := ""
	if size > 0 {
		sizeOpt = "size=" + prof.TmpSize
	}
	var ds []Decision
	at := -1
	var kept []rspec.Mount
	for _, m := range s.Mounts {
		if cleanAbs(m.Destination) != "/tmp" {
			kept = append(kept, m)
			continue
		}
		if at < 0 {
			at = len(kept)
		}
		before := m.Type + " " + m.Source + " " + fmtList(m.Options)
		why := "the caller's /tmp is replaced by a tmpfs that is size-capped, noexec and owned by the sandbox user"
		if m.Type == "tmpfs" && !isBind(m) {
			if o, ok := smallerTmpSize(m.Options, size); ok {
				sizeOpt = o
				why = "the caller's tmpfs keeps its smaller size; the other options are the profile's"
			}
		} else {
			why = "a bind at /tmp would make a host directory the writable scratch space; replaced by a tmpfs"
		}
		ds = append(ds, Decision{Rule: rule, Field: field, Action: Tightened, Before: before,
			Layer: LayerTmpfs, Why: why})
	}
	// uid/gid: runc gives the tmpfs the mode of the image's /tmp; owning it
	// keeps it writable for the sandbox user when that mode is 0755.
	opts := []string{"rw", "noexec", "nosuid", "nodev"}
	if sizeOpt != "" {
		opts = append(opts, sizeOpt)
	}
	opts = append(opts, "mode=1777", fmt.Sprintf("uid=%d", prof.UID), fmt.Sprintf("gid=%d", prof.GID))
	tmp := rspec.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: opts}
	after := "tmpfs " + fmtList(opts)
	if at < 0 {
		kept = append(kept, tmp)
		ds = append(ds, Decision{Rule: rule, Field: field, Action: Added, Before: "none", After: after,
			Layer: LayerTmpfs, Why: "the only writable place: size-capped (ENOSPC) and noexec (EACCES)"})
	} else {
		kept = append(kept[:at], append([]rspec.Mount{tmp}, kept[at:]...)...)
		for i := range ds {
			ds[i].After = after
		}
	}
	s.Mounts = kept
	return ds
}

// smallerTmpSize returns the caller's size= option when it is an absolute
// size below the profile's; percentages of RAM are not comparable.
func smallerTmpSize(opts []string, limit int64) (string, bool) {
	for _, o := range opts {
		v, ok := strings.CutPrefix(o, "size=")
		if !ok {
			continue
		}
		n, err := units.RAMInBytes(v)
		if err != nil || n <= 0 {
			return "", false
		}
		if limit == 0 || n < limit {
			return o, true
		}
	}
	return "", false
}
