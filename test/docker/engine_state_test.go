package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineStateBelowBindRoots: this dockerd keeps its data root and exec
// root below /tmp, one of the default bind_roots, as an operator does who
// puts data-root on a data disk at /data. Another container's files there
// (its configuration, the network database naming every container, an
// image's layer) are refused on both runtimes, as they are under
// /var/lib/docker; the files dockerd makes for this container (hosts,
// resolv.conf) are still bound, or every other test here would fail.
func TestEngineStateBelowBindRoots(t *testing.T) {
	d := daemon(t)
	other := strings.TrimSpace(d.Must(t, "create", "--runtime=runc", image, "true"))
	defer d.Run(t, "rm", "-f", other)
	sources := map[string]string{
		"another container's hostconfig.json": filepath.Join(d.DataRoot, "containers", other, "hostconfig.json"),
		"the network database":                filepath.Join(d.DataRoot, "network", "files", "local-kv.db"),
		"another container's directory":       filepath.Join(d.DataRoot, "containers", other),
		"the storage driver's directory":      filepath.Join(d.DataRoot, d.Storage),
	}
	if upper := strings.TrimSpace(d.Must(t, "inspect", "-f", "{{.GraphDriver.Data.UpperDir}}", other)); filepath.IsAbs(upper) {
		sources["another container's writable layer"] = upper
	}
	for what, src := range sources {
		if _, err := os.Stat(src); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, runtime := range []string{"bulkhead", "bulkhead-runsc"} {
			t.Run(what+"/"+runtime, func(t *testing.T) {
				r := d.Run(t, "run", "--rm", "--runtime="+runtime, "-v", src+":/s", image, "true")
				rule, ok := refusal(r)
				if !ok || rule != "host_mounts" {
					t.Fatalf("%s bound from %s, not refused by host_mounts:\n%s", what, src, r)
				}
				if !strings.Contains(r.Stderr, "laid out as an engine's state") {
					t.Errorf("the refusal does not say the directory is an engine's state:\n%s", r.Stderr)
				}
			})
		}
	}
}
