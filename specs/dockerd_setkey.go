package specs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// The hook dockerd adds for a container's network is its own binary,
// re-executed as "libnetwork-setkey", run by the backend as root on the
// host. It dials <exec-root>/libnetwork/<controller id>.sock and sends the
// container id and the path of the container's network namespace. Its
// arguments are therefore a root process's choice of socket and of
// message: only the shape dockerd itself writes is kept (moby's
// daemon/oci_linux.go WithLibnetwork, 20.10 and later):
//
//	["libnetwork-setkey", "-exec-root=" + <dockerd's exec root>, <container id>, <controller id[:12]>]
const (
	setkeyName      = "libnetwork-setkey"
	setkeyExecRoot  = "-exec-root="
	dockerdExecRoot = "/var/run/docker" // dockerd's default, when neither its flags nor daemon.json name one
	dockerdConfig   = "/etc/docker/daemon.json"
)

// shortControllerID is stringid.TruncateID of libnetwork's controller id,
// 64 random lowercase hex digits cut to 12.
var shortControllerID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{12}$`) })

// traceParent is the W3C trace context dockerd 25 and later put in the
// hook's environment (TRACEPARENT) so the re-executed binary joins its
// trace; nothing else in that environment is dockerd's.
var traceParent = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^TRACEPARENT=[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)
})

// setkeyRefusal judges the arguments, environment and timeout of dockerd's
// hook for the container id, against the exec root of the dockerd whose
// process the hook is. It returns the part at fault (".args[1]", ".env",
// ...) and why, with what to change; "" and "" when the hook is exactly
// what dockerd writes.
func setkeyRefusal(hk rspec.Hook, id, execRoot string) (part, why string) {
	if len(hk.Args) != 4 {
		return ".args", fmt.Sprintf("dockerd's hook has 4 arguments (%s, %s<exec root>, <container id>, <controller id>), not %d; send the hook as dockerd writes it",
			setkeyName, setkeyExecRoot, len(hk.Args))
	}
	if hk.Args[0] != setkeyName {
		return ".args[0]", "argv[0] must be " + setkeyName
	}
	root, ok := strings.CutPrefix(hk.Args[1], setkeyExecRoot)
	switch {
	case !ok:
		return ".args[1]", fmt.Sprintf("the second argument must be %s<exec root>, the only flag dockerd passes", setkeyExecRoot)
	case !filepath.IsAbs(root) || filepath.Clean(root) != root:
		return ".args[1]", fmt.Sprintf("the exec root %q must be a clean absolute path: the hook runs as root and dials a socket below it", root)
	case root != execRoot:
		return ".args[1]", fmt.Sprintf("the exec root %q is not the exec root %q of the dockerd that runs the hook: the hook runs as root and would dial a socket below it; pass dockerd's own exec root", root, execRoot)
	}
	switch {
	case id == "":
		return ".args[2]", "no container is being created to hand dockerd's network to"
	case hk.Args[2] != id:
		return ".args[2]", fmt.Sprintf("the container id %q is not the id %q of the container being created; dockerd names the container it creates", hk.Args[2], id)
	}
	if !shortControllerID().MatchString(hk.Args[3]) {
		return ".args[3]", fmt.Sprintf("the controller id %q is not the 12 lowercase hex digits dockerd passes: it names the socket the hook dials", hk.Args[3])
	}
	for _, kv := range hk.Env {
		if !traceParent().MatchString(kv) {
			name, _, _ := strings.Cut(kv, "=")
			return ".env", fmt.Sprintf("%s is not dockerd's: the only variable dockerd sets for its hook is TRACEPARENT; remove it", name)
		}
	}
	if len(hk.Env) > 1 {
		return ".env", "dockerd sets TRACEPARENT once; remove the others"
	}
	if hk.Timeout != nil {
		return ".timeout", "dockerd sets no timeout on its hook; remove it"
	}
	return "", ""
}

// dockerdExecRootOf reads the exec root of the dockerd process whose
// /proc/<pid> directory is dir: its --exec-root flag, else daemon.json's
// "exec-root" (the file its --config-file names), else the default. A
// relative path, which would depend on dockerd's working directory, or a
// daemon.json others can write, is an error.
func dockerdExecRootOf(dir string) (string, error) {
	data, err := os.ReadFile(dir + "/cmdline")
	if err != nil {
		return "", err
	}
	args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	root, config := execRootFlags(args)
	if root == "" {
		if root, err = execRootFromConfig(config); err != nil {
			return "", err
		}
	}
	if !filepath.IsAbs(root) {
		return "", fmt.Errorf("dockerd's exec root %q is not absolute", root)
	}
	return filepath.Clean(root), nil
}

// execRootFlags reads --exec-root and --config-file from dockerd's
// command line as its flag parser does (the last one counts); "" for an
// absent flag, dockerdConfig for an absent --config-file.
func execRootFlags(args []string) (execRoot, config string) {
	config = dockerdConfig
	for i := 1; i < len(args) && args[i] != "--"; i++ {
		for _, f := range []struct {
			name string
			dst  *string
		}{{"--exec-root", &execRoot}, {"--config-file", &config}} {
			if v, ok := strings.CutPrefix(args[i], f.name+"="); ok {
				*f.dst = v
			} else if args[i] == f.name && i+1 < len(args) {
				i++
				*f.dst = args[i]
			}
		}
	}
	return execRoot, config
}

// execRootFromConfig is daemon.json's "exec-root", or the default when the
// file is absent or names none. The file must be root's alone: dockerd
// read it as root.
func execRootFromConfig(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("dockerd's --config-file %q is not absolute", path)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return dockerdExecRoot, nil
	}
	if err != nil {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", err
	}
	if !OnlyRootWrites(&st) {
		return "", fmt.Errorf("%s can be written by others than root", path)
	}
	var cfg struct {
		ExecRoot string `json:"exec-root"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&cfg); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if cfg.ExecRoot == "" {
		return dockerdExecRoot, nil
	}
	return cfg.ExecRoot, nil
}
