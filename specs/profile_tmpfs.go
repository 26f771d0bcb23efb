package specs

import (
	"fmt"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// placeTmpfs puts a tmpfs of the profile at dst, owned by the process's
// user, replacing whatever the caller mounted there (a bind would make a
// host directory the writable place; a caller's tmpfs would bring its own
// size and flags). The mounts rule leaves it as placed and counts its size
// against tmpfs_total.
func placeTmpfs(rule string, s *rspec.Spec, dst string, opts []string, why string) []Decision {
	field := "mounts[" + dst + "]"
	uid, gid := uint32(0), uint32(0)
	if s.Process != nil {
		uid, gid = s.Process.User.UID, s.Process.User.GID
	}
	opts = append(opts, fmt.Sprintf("uid=%d", uid), fmt.Sprintf("gid=%d", gid))
	m := rspec.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: opts}
	after := "tmpfs " + fmtList(opts)
	var ds []Decision
	at := -1
	var kept []rspec.Mount
	for _, old := range s.Mounts {
		if cleanAbs(old.Destination) != dst {
			kept = append(kept, old)
			continue
		}
		if at < 0 {
			at = len(kept)
		}
		ds = append(ds, Decision{Rule: rule, Field: field, Action: Tightened,
			Before: old.Type + " " + old.Source + " " + fmtList(old.Options), After: after, Layer: LayerTmpfs,
			Why: "the caller's mount is replaced by the profile's tmpfs: " + why})
	}
	if at < 0 {
		kept = append(kept, m)
		ds = append(ds, Decision{Rule: rule, Field: field, Action: Added, Before: "none", After: after,
			Layer: LayerTmpfs, Why: why})
	} else {
		kept = append(kept[:at], append([]rspec.Mount{m}, kept[at:]...)...)
	}
	s.Mounts = kept
	return ds
}

// setEnvDefaults sets each variable the caller did not set, in order, and
// records each one added. A caller's own value is kept, unrecorded: the
// caller chose it.
func setEnvDefaults(rule string, p *rspec.Process, vars [][2]string, layer Layer, why string) []Decision {
	set := map[string]bool{}
	for _, kv := range p.Env {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	var ds []Decision
	for _, v := range vars {
		if set[v[0]] {
			continue
		}
		p.Env = append(p.Env, v[0]+"="+v[1])
		ds = append(ds, Decision{Rule: rule, Field: "process.env[" + v[0] + "]", Action: Added,
			Before: "unset", After: v[1], Layer: layer, Why: why})
	}
	return ds
}
