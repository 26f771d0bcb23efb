package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCallerNetworkHook: a profile that keeps the caller's network keeps
// dockerd's libnetwork-setkey hook, which gives the container Docker's
// eth0. bulkhead hands runc the checked path of dockerd's executable
// rather than dockerd's /proc/<pid>/exe, and the hook still works.
func TestCallerNetworkHook(t *testing.T) {
	d := daemon(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	audit := filepath.Join(dir, "audit.jsonl")
	body := fmt.Sprintf("audit_log = %q\n[profiles.default]\nnetwork = \"caller\"\n", audit)
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	registerRuntime(t, d, "bulkhead-net", "--config", config)
	out := d.Must(t, "run", "--rm", "--runtime=bulkhead-net", image, "ls", "/sys/class/net")
	if !strings.Contains(out, "eth0") {
		t.Fatalf("interfaces %q: dockerd's hook did not give the container eth0", out)
	}
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"before":"/proc/`) || !strings.Contains(string(data), "dockerd's own network hook") {
		t.Errorf("no decision rewriting dockerd's hook in the audit log:\n%.2000s", data)
	}
}
