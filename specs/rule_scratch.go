package specs

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// ScratchDir is where the scratch rule mounts the build scratch.
const ScratchDir = "/scratch"

// scratchEnv sends temporary build outputs to the scratch: `go test`
// links its test binaries in GOTMPDIR (else TMPDIR) and runs them from
// there, which /tmp, noexec, refuses (EACCES).
var scratchEnv = [][2]string{
	{"TMPDIR", ScratchDir},
	{"GOTMPDIR", ScratchDir},
}

// ruleScratch gives a job profile (scratch_size set) the one tmpfs whose
// files may be executed: what a build links and then runs. It stays
// nosuid and nodev and size-capped; /tmp and the home stay noexec. The
// default profile grants none.
func ruleScratch(c *Context, s *rspec.Spec) []Decision {
	const rule = "scratch"
	size, err := c.Profile.ScratchBytes()
	if err != nil {
		return []Decision{{Rule: rule, Field: "mounts[" + ScratchDir + "]", Action: Refused, Layer: LayerNone,
			Why: "profile: " + err.Error()}}
	}
	if size == 0 {
		return nil
	}
	opts := []string{"rw", "exec", "nosuid", "nodev", "size=" + c.Profile.ScratchSize, "mode=0700"}
	ds := placeTmpfs(rule, s, ScratchDir, opts,
		"build scratch whose outputs may be executed (a job-profile grant): size-capped (ENOSPC), nosuid, nodev; its pages count against the memory ceiling")
	return append(ds, scratchEnvOf(c.Profile, s.Process)...)
}

// scratchEnvOf sends the process's temporary build outputs to a job
// profile's scratch (scratch_size set) where the caller set no TMPDIR or
// GOTMPDIR: create's process and every exec'd one.
func scratchEnvOf(prof *Profile, p *rspec.Process) []Decision {
	if p == nil {
		return nil
	}
	if size, err := prof.ScratchBytes(); err != nil || size == 0 {
		return nil
	}
	return setEnvDefaults("scratch", p, scratchEnv, LayerTmpfs,
		"temporary build outputs go to the scratch, where they may be run; set only where the caller did not")
}
