package specs

import (
	"path"
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// HomeDir is where the home rule mounts the sandbox user's home.
const HomeDir = "/home/sandbox"

// homeEnv points the home and the caches of the common toolchains into
// HomeDir. Without them a tool writes below HOME of the image (/root,
// /nonexistent), which the read-only root refuses (EROFS), or the caches
// end up in the 16m /tmp.
var homeEnv = [][2]string{
	{"HOME", HomeDir},
	{"XDG_CACHE_HOME", HomeDir + "/.cache"},
	{"GOCACHE", HomeDir + "/.cache/go-build"},
	{"GOPATH", HomeDir + "/go"},
	{"PIP_CACHE_DIR", HomeDir + "/.cache/pip"},
	{"npm_config_cache", HomeDir + "/.npm"},
	{"CARGO_HOME", HomeDir + "/.cargo"},
}

// ruleHome gives the sandbox user a writable, size-capped home with its
// caches, when the profile has a home_size: a tmpfs owned by the process's
// user, noexec, nosuid, nodev. Its pages are memory of the container.
func ruleHome(c *Context, s *rspec.Spec) []Decision {
	const rule = "home"
	size, err := c.Profile.HomeBytes()
	if err != nil {
		return []Decision{{Rule: rule, Field: "mounts[" + HomeDir + "]", Action: Refused, Layer: LayerNone,
			Why: "profile: " + err.Error()}}
	}
	if size == 0 {
		return nil
	}
	opts := []string{"rw", "noexec", "nosuid", "nodev", "size=" + c.Profile.HomeSize, "mode=0700"}
	ds := placeTmpfs(rule, s, HomeDir, opts,
		"the sandbox user's home and caches: writable, size-capped (ENOSPC), noexec (EACCES); its pages count against the memory ceiling")
	return append(ds, homeEnvOf(c.Profile, s.Process, s.Mounts)...)
}

// homeEnvOf points the process's home and caches into the writable home
// (a job profile's, home_size set): each variable where the caller set
// none, and each one the caller set in the read-only root. It holds for
// create's process and for every exec'd one (docker exec, ctr task exec),
// whose environment is the engine's, not the container's. mounts are the
// container's.
func homeEnvOf(prof *Profile, p *rspec.Process, mounts []rspec.Mount) []Decision {
	if p == nil {
		return nil
	}
	if size, err := prof.HomeBytes(); err != nil || size == 0 {
		return nil
	}
	ds := outOfReadOnlyRoot(prof, p, mounts)
	return append(ds, setEnvDefaults("home", p, homeEnv, LayerTmpfs,
		"home and caches in the writable home; set only where the caller did not")...)
}

// outOfReadOnlyRoot points a caller's home or cache variable that lies in
// the read-only root filesystem at the writable home. Docker sends
// HOME=/root for every image whose user it does not know, and the golang
// images set GOPATH=/go: the process runs as the sandbox user in a
// read-only root, so git config --global, go mod download and every
// ~/.config write failed (EROFS) beside a home that was there to take
// them. A value in a writable place (the home, /tmp, the scratch, a
// workspace, a tmpfs the caller mounted: binds are read-only) is the
// caller's choice and kept; the first entry of a list (GOPATH's) is the
// one written to.
func outOfReadOnlyRoot(prof *Profile, p *rspec.Process, mounts []rspec.Mount) []Decision {
	writable := append([]string{HomeDir, "/tmp", ScratchDir}, prof.Workspaces...)
	for _, m := range mounts {
		if m.Type == "tmpfs" {
			writable = append(writable, m.Destination)
		}
	}
	var ds []Decision
	for i, kv := range p.Env {
		name, value, _ := strings.Cut(kv, "=")
		j := slices.IndexFunc(homeEnv, func(v [2]string) bool { return v[0] == name })
		if j < 0 {
			continue
		}
		first, _, _ := strings.Cut(value, ":")
		clean := path.Clean("/" + first)
		if slices.ContainsFunc(writable, func(w string) bool { return under(clean, path.Clean(w)) }) {
			continue
		}
		p.Env[i] = name + "=" + homeEnv[j][1]
		ds = append(ds, Decision{Rule: "home", Field: "process.env[" + name + "]", Action: Tightened, Before: value, After: homeEnv[j][1], Layer: LayerTmpfs,
			Why: value + " lies in the read-only root filesystem, where every write below it fails (EROFS): the writable home instead"})
	}
	return ds
}
