package specs

import (
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
	return append(ds, setEnvDefaults(rule, s, homeEnv, LayerTmpfs,
		"home and caches in the writable home; set only where the caller did not")...)
}
