package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestPlainBindKeepsAHomePrivate: runc mounts a bind as root, past every
// directory above its source, so a bind below a home its owner keeps from
// others (0700) showed the job world-readable files no local user can
// reach (~/.npmrc's token, ~/.m2/settings.xml). Such binds are refused on
// both backends, as is any dot-entry of a home; a directory of a home
// others may enter is bound and shows what others may read.
func TestPlainBindKeepsAHomePrivate(t *testing.T) {
	home := fmt.Sprintf("/home/bh-test-%d", os.Getpid())
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			t.Cleanup(func() { os.RemoveAll(home) })
			for name, body := range map[string]string{".npmrc": "_authToken=npm_SECRET\n", ".m2/settings.xml": "<password>s</password>\n", "project/README": "public\n"} {
				p := filepath.Join(home, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(home, 0o700); err != nil {
				t.Fatal(err)
			}
			root := stateRoot(t)
			bind := func(src string) result {
				b := bundle.New(t, []string{"sh", "-c", "cat /data/* /data 2>/dev/null; true"}, func(s *rspec.Spec) {
					s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
				})
				return bulkhead(t, "", "--root", root, "--backend", backend, "run", "--bundle", b, uniqueID("home-"+backend))
			}
			for _, src := range []string{filepath.Join(home, ".npmrc"), filepath.Join(home, ".m2"), filepath.Join(home, "project")} {
				r := bind(src)
				if r.code == 0 || !strings.Contains(r.stderr, "rule host_mounts") || strings.Contains(r.stdout, "SECRET") {
					t.Errorf("%s below a 0700 home: exit %d, stdout %q\n%s", src, r.code, r.stdout, r.stderr)
				}
			}
			if err := os.Chmod(home, 0o755); err != nil {
				t.Fatal(err)
			}
			if r := bind(filepath.Join(home, "project")); r.code != 0 || !strings.Contains(r.stdout, "public") {
				t.Errorf("a directory of a home others may enter: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
			}
			if r := bind(filepath.Join(home, ".npmrc")); r.code == 0 || !strings.Contains(r.stderr, "dot-entry") {
				t.Errorf("~/.npmrc of a home others may enter: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}
