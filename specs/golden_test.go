package specs

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// podNamespace stands in for the runtime's registry in the golden tests:
// every /proc/N/ns path except init's, and every named netns, belongs to a
// pod sandbox bulkhead created.
var podNamespace = regexp.MustCompile(`^(/proc/([2-9]|[1-9][0-9]+)/ns/[a-z_]+|/var/run/netns/[^/]+)$`)

// goldenContext is the context of a fixture: its engine ran the backend
// with --systemd-cgroup when its cgroupsPath is slice:prefix:name.
func goldenContext(in *rspec.Spec) *Context {
	c := testContext()
	c.SystemdCgroup = in.Linux != nil && strings.Contains(in.Linux.CgroupsPath, ":")
	c.JoinableNamespace = func(_ rspec.LinuxNamespaceType, p string) bool {
		return podNamespace.MatchString(p)
	}
	return c
}

type golden struct {
	Spec      *rspec.Spec `json:"spec"`
	Decisions []Decision  `json:"decisions"`
	Error     string      `json:"error,omitempty"`
}

// fixtures are the config.json files in testdata: dropping a captured one
// there adds a case; `go test ./specs -update` writes its golden output.
func fixtures(t testing.TB) []string {
	all, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".golden.json") {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatal("no fixtures")
	}
	return out
}

func TestGolden(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			c := goldenContext(in)
			out, ds, err := Apply(c, in)
			g := golden{Spec: out, Decisions: ds}
			if err != nil {
				var re *RefusalError
				if !errors.As(err, &re) {
					t.Fatalf("Apply: %v", err)
				}
				g.Error = err.Error()
			} else if err := CheckInvariantsContext(c, out); err != nil {
				t.Fatalf("rewritten spec breaks the policy: %v", err)
			}
			got, err := json.MarshalIndent(g, "", "\t")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := strings.TrimSuffix(f, ".json") + ".golden.json"
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./specs -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("output differs from %s (run go test ./specs -update and review the diff):\n%s", path, got)
			}
		})
	}
}

// TestGoldenEngineFiles: the per-container files engines bind must pass.
func TestGoldenEngineFiles(t *testing.T) {
	for _, f := range []string{"testdata/docker-run-busybox.json", "testdata/cri-containerd-pod.json"} {
		data, _ := os.ReadFile(f)
		in, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		_, ds, err := Apply(goldenContext(in), in)
		if err != nil {
			t.Fatalf("%s refused: %v", f, err)
		}
		for _, d := range ds {
			if d.Rule == "host_mounts" && d.Action != Tightened && d.Action != Kept {
				t.Fatalf("%s: %+v", f, d)
			}
		}
	}
}
