package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/leftover"
)

// A job that asks for the install profile with the annotation gets the
// operator's registries through the broker and the profile's lifetime;
// the same job without the annotation runs under the default profile and
// reaches nothing.
func TestInstallProfileByAnnotation(t *testing.T) {
	needRoot(t, "runc", "ip", "unshare")
	h := newEgressHost(t)
	_, audit, hosts := egressConfig(t, h, "")
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("audit_log = %q\n[profiles.install]\negress = [\"allowed.test:80\", \"%s:80\"]\n", audit, h.addr)
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	root := stateRoot(t)
	g := []string{"--config", config, "--root", root}

	run := func(annotations map[string]string) (string, result) {
		t.Helper()
		id := uniqueID("install")
		b := bundle.New(t, []string{"sleep", "3600"}, func(s *rspec.Spec) { s.Annotations = annotations })
		if r := createWithHosts(t, hosts, append(g, "create", "--bundle", b, id)...); r.code != 0 {
			t.Fatalf("create: exit %d\n%s", r.code, r.stderr)
		}
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		must(t, append(g, "start", id)...)
		return id, bulkhead(t, "", append(g, "exec", id, "wget", "-q", "-O-", "http://allowed.test/hello.txt")...)
	}

	id, r := run(map[string]string{"bulkhead.dev/profile": "install"})
	var info struct {
		Profile     string `json:"profile"`
		MaxLifetime string `json:"max_lifetime"`
	}
	if err := json.Unmarshal([]byte(must(t, append(g, "inspect", "--format", "json", id)...)), &info); err != nil {
		t.Fatal(err)
	}
	if info.Profile != "install" || info.MaxLifetime != "15m0s" {
		t.Errorf("inspect: profile %q lifetime %q, want install and 15m0s", info.Profile, info.MaxLifetime)
	}
	if r.code != 0 || r.stdout != "hello from the test host\n" {
		t.Fatalf("install job fetching a listed registry: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if pids := leftover.Brokers(id); len(pids) != 1 {
		t.Errorf("install job: brokers %v, want one", pids)
	}
	must(t, append(g, "delete", "--force", id)...)
	if pids := leftover.Brokers(id); len(pids) != 0 {
		t.Errorf("after delete: brokers %v", pids)
	}

	id, r = run(nil)
	if r.code == 0 || !strings.Contains(r.stderr, "bad address") && !strings.Contains(r.stderr, "unreachable") {
		t.Errorf("default-profile job fetching the same name: exit %d, stderr %q; want no name and no route", r.code, r.stderr)
	}
	if pids := leftover.Brokers(id); len(pids) != 0 {
		t.Errorf("default-profile job: brokers %v, want none", pids)
	}
}
