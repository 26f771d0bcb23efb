package doctor

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"bulkhead.dev/bulkhead/install"
)

// Engines checks the engines' registrations: which runtime entries
// in daemon.json and handlers in containerd's config.toml lead to a
// bulkhead, and whether that is this one; and who may speak containerd's
// API. A registration of another
// bulkhead (an old copy, a removed path) runs containers under a policy
// this doctor did not judge.
func Engines(opt Options) []Check {
	self := opt.Bulkhead
	if self == "" {
		self, _ = os.Executable()
	}
	if p, err := filepath.EvalSymlinks(self); err == nil {
		self = p
	}
	docker := opt.DockerConfig
	if docker == "" {
		docker = install.DockerConfigPath()
	}
	containerd := opt.ContainerdConfig
	if containerd == "" {
		containerd = install.DefaultContainerdConfig
	}
	return []Check{doctorDocker(docker, self), doctorContainerd(containerd, self), ContainerdSocket(containerd)}
}

func doctorDocker(path, self string) Check {
	c := Check{Name: "docker registration", Looked: path}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return notRegistered(c, "dockerd", "bulkhead install docker")
	}
	if err != nil {
		c.Status, c.Found = StatusWarn, err.Error()
		return c
	}
	var doc struct {
		Runtimes map[string]struct {
			Path string `json:"path"`
		} `json:"runtimes"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		c.Status, c.Found = StatusWarn, "unreadable: "+err.Error()
		c.Fix = "dockerd refuses to start with a broken daemon.json: fix its JSON"
		return c
	}
	found := map[string]string{}
	for name, r := range doc.Runtimes {
		found[name] = r.Path
	}
	return judgeRegistrations(c, found, self, "bulkhead install docker --config "+path)
}

func doctorContainerd(path, self string) Check {
	c := Check{Name: "containerd registration", Looked: path}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return notRegistered(c, "containerd", "bulkhead install containerd")
	}
	if err != nil {
		c.Status, c.Found = StatusWarn, err.Error()
		return c
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		c.Status, c.Found = StatusWarn, "unreadable: "+err.Error()
		return c
	}
	found := map[string]string{}
	plugins, _ := doc["plugins"].(map[string]any)
	for _, cri := range []string{"io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"} {
		p, _ := plugins[cri].(map[string]any)
		ctd, _ := p["containerd"].(map[string]any)
		runtimes, _ := ctd["runtimes"].(map[string]any)
		for name, v := range runtimes {
			r, _ := v.(map[string]any)
			typ, _ := r["runtime_type"].(string)
			opts, _ := r["options"].(map[string]any)
			bin, _ := opts["BinaryName"].(string)
			switch {
			case typ == install.ShimRuntimeType:
				// The shim finds bulkhead next to itself, then on PATH.
				shim, err := exec.LookPath("containerd-shim-bulkhead-v2")
				if err != nil {
					found[name] = "containerd-shim-bulkhead-v2 (not on PATH)"
					continue
				}
				found[name] = filepath.Join(filepath.Dir(shim), "bulkhead")
			case bin != "":
				found[name] = bin
			}
		}
	}
	return judgeRegistrations(c, found, self, "bulkhead install containerd --config "+path)
}

// judgeRegistrations keeps the entries that lead to a bulkhead (by the
// binary's name) and says whether they lead to self.
func judgeRegistrations(c Check, entries map[string]string, self, installCmd string) Check {
	var ours, others []string
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		path := entries[name]
		if !strings.HasPrefix(filepath.Base(path), "bulkhead") && !strings.HasPrefix(name, "bulkhead") {
			continue
		}
		resolved, err := filepath.EvalSymlinks(path)
		switch {
		case err != nil:
			others = append(others, fmt.Sprintf("%s -> %s (missing)", name, path))
		case resolved == self:
			ours = append(ours, name)
		default:
			others = append(others, fmt.Sprintf("%s -> %s", name, resolved))
		}
	}
	switch {
	case len(others) > 0:
		c.Status = StatusWarn
		c.Found = "entries not leading to this bulkhead (" + self + "): " + strings.Join(others, ", ")
		if len(ours) > 0 {
			c.Found += "; this one: " + strings.Join(ours, ", ")
		}
		c.Fix = "re-run " + installCmd + " from the bulkhead you mean, or remove the stale entries"
	case len(ours) > 0:
		c.Status, c.Found = StatusOK, "runtimes "+strings.Join(ours, ", ")+" lead to "+self
	default:
		c.Status, c.Found = StatusWarn, "no bulkhead runtime registered"
		c.Fix = installCmd
	}
	return c
}

// notRegistered is the verdict for an engine configuration file that does
// not exist: fine where the engine is not installed at all.
func notRegistered(c Check, engine, installCmd string) Check {
	if _, err := exec.LookPath(engine); err != nil {
		c.Status, c.Found = StatusOK, fmt.Sprintf("absent, and no %s on PATH: nothing to register with", engine)
		return c
	}
	c.Status, c.Found = StatusWarn, fmt.Sprintf("absent while %s is installed: bulkhead is not registered", engine)
	c.Fix = installCmd
	return c
}
