package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestExecIntoSandboxSparesThePod: the pod's containers may join the
// sandbox's pid namespace (a pod that shares its process namespace), so
// the sweep after an exec into the sandbox judges the sandbox's own
// processes, and never kills a container of the pod as "outside the
// container's cgroup".
func TestExecIntoSandboxSparesThePod(t *testing.T) {
	needRunc(t)
	sid := fmt.Sprintf("podsandbox-%d", os.Getpid())
	pod := map[string]string{
		"io.kubernetes.cri.sandbox-id":        sid,
		"io.kubernetes.cri.sandbox-uid":       "uid-" + sid,
		"io.kubernetes.cri.sandbox-namespace": "ns1",
		"io.kubernetes.cri.sandbox-name":      "pod1",
	}
	annotations := func(kind string) map[string]string {
		a := map[string]string{"io.kubernetes.cri.container-type": kind}
		for k, v := range pod {
			a[k] = v
		}
		return a
	}
	root := filepath.Join(t.TempDir(), "state")
	start := func(id, kind string, mutate func(*rspec.Spec)) int {
		dir := bundle.NewCRI(t, kind, id, []string{"sleep", "60"}, mutate)
		must(t, nil, "--root", root, "create", "--bundle", dir, id)
		t.Cleanup(func() { bulkhead(t, "", nil, "--root", root, "delete", "--force", id) })
		must(t, nil, "--root", root, "start", id)
		var st struct{ Pid int }
		if err := json.Unmarshal([]byte(must(t, nil, "--root", root, "state", id)), &st); err != nil || st.Pid == 0 {
			t.Fatalf("state of %s: %v", id, err)
		}
		return st.Pid
	}
	sandboxPid := start(sid, "sandbox", func(s *rspec.Spec) { s.Annotations = annotations("sandbox") })
	member := "member-" + sid
	memberPid := start(member, "container", func(s *rspec.Spec) {
		s.Annotations = annotations("container")
		for i, ns := range s.Linux.Namespaces {
			if ns.Type == rspec.PIDNamespace {
				s.Linux.Namespaces[i].Path = fmt.Sprintf("/proc/%d/ns/pid", sandboxPid)
			}
		}
	})
	must(t, nil, "--root", root, "exec", sid, "sh", "-c", "sleep 0.3; true")
	var st struct{ Status string }
	if err := json.Unmarshal([]byte(must(t, nil, "--root", root, "state", member)), &st); err != nil || st.Status != "running" {
		t.Fatalf("the pod's other container after an exec into its sandbox: %q (%v), want running", st.Status, err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", memberPid)); err != nil {
		t.Fatalf("the pod's other container's init is gone: %v", err)
	}
}
