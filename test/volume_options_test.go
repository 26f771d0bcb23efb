package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// A Docker named volume is the engine's own file, but its driver options
// can mount anything at its data: a bind of a filesystem's root (the
// host's /dev/shm), an overlay over any host directory (/etc). Such a
// volume is judged by what is mounted there: refused, where a plain
// volume runs. dockerd is not needed to show it: in a mount namespace of
// the test's own, /var/lib/docker is a tmpfs with volumes laid out as
// dockerd lays them out, and bulkhead runs there as dockerd would call it.
func TestNamedVolumeJudgedByWhatIsMounted(t *testing.T) {
	needRoot(t, "runc")
	const docker = "/var/lib/docker"
	if _, err := os.Stat(docker); os.IsNotExist(err) {
		if err := os.Mkdir(docker, 0o711); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(docker) })
	}
	root := stateRoot(t)
	logs := t.TempDir()
	vols := []string{"plain", "shm", "etc-overlay"}
	var script strings.Builder
	fmt.Fprintf(&script, "set -e\nmount -t tmpfs bulkhead-test %s\n", docker)
	for _, v := range vols {
		fmt.Fprintf(&script, "mkdir -p %s/volumes/%s/_data\n", docker, v)
	}
	fmt.Fprintf(&script, "mount --bind /dev/shm %s/volumes/shm/_data\n", docker)
	fmt.Fprintf(&script, "mkdir %[1]s/volumes/etc-overlay/u %[1]s/volumes/etc-overlay/w\n", docker)
	fmt.Fprintf(&script, "mount -t overlay overlay -o lowerdir=/etc,upperdir=%[1]s/volumes/etc-overlay/u,workdir=%[1]s/volumes/etc-overlay/w %[1]s/volumes/etc-overlay/_data\n", docker)
	script.WriteString("set +e\n")
	for _, v := range vols {
		src := filepath.Join(docker, "volumes", v, "_data")
		b := bundle.New(t, []string{"true"}, func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
		})
		// Pipes, as engines hand them: the container's stdio is not a
		// file of root's.
		fmt.Fprintf(&script, "%q --root %q run --bundle %q %s </dev/null 2>&1 | cat > %q; echo ${PIPESTATUS[0]} > %q\n",
			binaries.Bulkhead(t), root, b, uniqueID("volume-"+v), filepath.Join(logs, v+".log"), filepath.Join(logs, v+".exit"))
	}
	if out, err := exec.Command("unshare", "--mount", "--propagation", "private", "bash", "-c", script.String()).CombinedOutput(); err != nil {
		t.Fatalf("the mount namespace with dockerd's layout: %v\n%s", err, out)
	}
	result := func(v string) (string, string) {
		exit, _ := os.ReadFile(filepath.Join(logs, v+".exit"))
		log, _ := os.ReadFile(filepath.Join(logs, v+".log"))
		return strings.TrimSpace(string(exit)), string(log)
	}
	for _, v := range vols {
		e, l := result(v)
		t.Logf("%s: exit %s: %s", v, e, l)
	}
	if exit, log := result("plain"); exit != "0" {
		t.Errorf("a plain volume: exit %s, want 0\n%s", exit, log)
	}
	for v, want := range map[string]string{"shm": "is a mount of /dev/shm", "etc-overlay": "the volume's driver options mounted"} {
		if exit, log := result(v); exit == "0" || !strings.Contains(log, "rule host_mounts") || !strings.Contains(log, want) {
			t.Errorf("volume %s: exit %s, want a host_mounts refusal saying %q\n%s", v, exit, want, log)
		}
	}
}
