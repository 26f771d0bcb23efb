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
	ds = append(ds, homeOutOfReadOnlyRoot(c, s)...)
	return append(ds, setEnvDefaults(rule, s, homeEnv, LayerTmpfs,
		"home and caches in the writable home; set only where the caller did not")...)
}

// homeOutOfReadOnlyRoot points a caller's HOME that lies in the read-only
// root filesystem at the writable home. Docker sends HOME=/root for every
// image whose user it does not know, and the process runs as the sandbox
// user in a read-only root: git config --global, go env -w and every
// ~/.config write failed (EROFS) beside a home that was there to take
// them. A HOME in a writable place of the profile's (the home, /tmp, the
// scratch, a workspace) is the caller's choice and kept.
func homeOutOfReadOnlyRoot(c *Context, s *rspec.Spec) []Decision {
	if s.Process == nil {
		return nil
	}
	writable := append([]string{HomeDir, "/tmp", ScratchDir}, c.Profile.Workspaces...)
	for i, kv := range s.Process.Env {
		name, value, _ := strings.Cut(kv, "=")
		if name != "HOME" {
			continue
		}
		clean := path.Clean("/" + value)
		if slices.ContainsFunc(writable, func(w string) bool { return under(clean, path.Clean(w)) }) {
			continue
		}
		s.Process.Env[i] = "HOME=" + HomeDir
		return []Decision{{Rule: "home", Field: "process.env[HOME]", Action: Tightened, Before: value, After: HomeDir, Layer: LayerTmpfs,
			Why: value + " lies in the read-only root filesystem, where every write below HOME fails (EROFS): the writable home instead"}}
	}
	return nil
}
