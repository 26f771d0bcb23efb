package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/leftover"
)

// running creates and starts a `sleep 60` container through bulkhead on
// runc and returns its --root, id and bundle; it is deleted at the end.
func running(t *testing.T, env []string, mutate ...func(*rspec.Spec)) (root, id, dir string) {
	t.Helper()
	dir = bundle.New(t, []string{"sleep", "60"}, mutate...)
	root = filepath.Join(t.TempDir(), "state")
	id = fmt.Sprintf("%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), os.Getpid())
	must(t, env, "--root", root, "create", "--bundle", dir, id)
	t.Cleanup(func() { bulkhead(t, "", env, "--root", root, "delete", "--force", id) })
	must(t, env, "--root", root, "start", id)
	return root, id, dir
}

// containerCgroup is the cgroup of container id under root, as the spec
// bulkhead handed over names it (in bulkhead's own bundle; the caller's
// config.json stays as given).
func containerCgroup(t *testing.T, root, id string) *cgroups.Group {
	t.Helper()
	s, err := bundle.Read(filepath.Join(root, "bulkhead", id, "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Linux == nil || s.Linux.CgroupsPath == "" {
		t.Fatal("the handed-over config.json names no cgroupsPath")
	}
	g, err := cgroups.Load(s.Linux.CgroupsPath)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestExecIsPoliced: whatever an exec asks for, by flags or by a
// --process file as dockerd sends it, the process gets no capabilities,
// no root, no_new_privs and no secret variables.
func TestExecIsPoliced(t *testing.T) {
	needRunc(t)
	root, id, _ := running(t, nil)

	out := must(t, nil, "--root", root, "exec", "--cap", "CAP_SYS_ADMIN", "--user", "0", "--env", "GITHUB_TOKEN="+secretValues[0],
		id, "cat", "/proc/self/status")
	checkExecStatus(t, "exec --cap CAP_SYS_ADMIN --user 0", out)

	proc := rspec.Process{
		Args: []string{"sh", "-c", "cat /proc/self/status; echo '== env'; env"},
		Env:  []string{"PATH=/bin", "GITHUB_TOKEN=" + secretValues[0], "AWS_SECRET_ACCESS_KEY=" + secretValues[1]},
		Cwd:  "/",
		User: rspec.User{UID: 0, GID: 0, AdditionalGids: []uint32{0}},
		Capabilities: &rspec.LinuxCapabilities{Bounding: allCaps, Effective: allCaps, Inheritable: allCaps,
			Permitted: allCaps, Ambient: allCaps},
		NoNewPrivileges: false,
	}
	data, err := json.Marshal(proc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "process.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out = must(t, nil, "--root", root, "exec", "--process", path, id)
	checkExecStatus(t, "exec --process (all caps, uid 0, nnp false)", out)
	env := sections(out)["env"]
	for _, name := range []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"} {
		if strings.Contains(env, name) {
			t.Errorf("exec --process: %s reached the process", name)
		}
	}
	if !strings.Contains(env, "PATH=/bin") {
		t.Errorf("exec --process: ordinary variables dropped:\n%s", env)
	}
}

func checkExecStatus(t *testing.T, what, out string) {
	t.Helper()
	for _, v := range secretValues {
		if strings.Contains(out, v) {
			t.Errorf("%s: secret value visible", what)
		}
	}
	for key, want := range map[string]string{
		"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapBnd": "0000000000000000",
		"CapAmb": "0000000000000000", "Uid": "65534\t65534\t65534\t65534", "NoNewPrivs": "1", "Seccomp": "2",
	} {
		if got := statusField(out, key); got != want {
			t.Errorf("%s: %s %q, want %q", what, key, got, want)
		}
	}
	if g := statusField(out, "Groups"); strings.Contains(" "+g+" ", " 0 ") {
		t.Errorf("%s: supplementary group 0: %q", what, g)
	}
}

// TestUpdateIsClamped: `update` cannot raise a container above the
// profile's ceilings, whether the request comes as JSON on stdin (dockerd)
// or as flags; a stricter value is applied. Read back from the kernel.
func TestUpdateIsClamped(t *testing.T) {
	needRunc(t)
	root, id, _ := running(t, nil)
	g := containerCgroup(t, root, id)
	const mib256 = 256 << 20
	expect := func(step string, pids int64) {
		t.Helper()
		l, err := g.Limits()
		if err != nil {
			t.Fatal(err)
		}
		if l.PidsMax != pids || l.MemoryMax != mib256 || (l.MemorySwapMax != cgroups.Absent && l.MemorySwapMax != mib256) {
			t.Errorf("%s: pids.max %s, memory %s, memory+swap %s; want %d, %d, %d", step,
				cgroups.String(l.PidsMax), cgroups.String(l.MemoryMax), cgroups.String(l.MemorySwapMax), pids, mib256, mib256)
		}
	}
	expect("after create", 64)

	r := bulkhead(t, `{"memory":{"limit":10737418240},"pids":{"limit":100000}}`, nil, "--root", root, "update", "--resources", "-", id)
	if r.code != 0 {
		t.Fatalf("update --resources -: exit %d: %s", r.code, r.stderr)
	}
	expect("update --resources - {memory 10g, pids 100000}", 64)

	must(t, nil, "--root", root, "update", "--memory", "10g", "--pids-limit", "100000", id)
	expect("update --memory 10g --pids-limit 100000", 64)

	must(t, nil, "--root", root, "update", "--memory", "-1", "--memory-swap", "-1", "--pids-limit", "-1", id)
	expect("update to unlimited (-1)", 64)

	must(t, nil, "--root", root, "update", "--pids-limit", "10", id)
	expect("update --pids-limit 10 (stricter, kept)", 10)
}

// TestUpdateAndExecReadOnlyWhatTheyPolice: an `update --resources` or
// `exec --process` document with a member no runtime-spec type defines,
// or a second document after it, is refused naming it, as config.json's
// are; it was dropped and the rest applied. A list longer than its bound
// is refused before any rule judges it. The container keeps its limits.
func TestUpdateAndExecReadOnlyWhatTheyPolice(t *testing.T) {
	needRunc(t)
	root, id, _ := running(t, nil)
	g := containerCgroup(t, root, id)
	pidsLimit := int64(10)
	throttles := make([]rspec.LinuxThrottleDevice, 2000)
	for i := range throttles {
		throttles[i] = rspec.LinuxThrottleDevice{Rate: 1 << 20}
		throttles[i].Major, throttles[i].Minor = 8, int64(i)
	}
	long, err := json.Marshal(rspec.LinuxResources{Pids: &rspec.LinuxPids{Limit: &pidsLimit},
		BlockIO: &rspec.LinuxBlockIO{ThrottleReadBpsDevice: throttles}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, doc, names string }{
		{"an unknown member", `{"pids":{"limit":10},"memry":{"limit":1}}`, "memry"},
		{"a second document", `{"pids":{"limit":10}} {"pids":{"limit":1}}`, "trailing data"},
		{"a member in another case", `{"pids":{"limit":10},"PIDS":{"limit":1}}`, "PIDS"},
		{"a member twice", `{"pids":{"limit":1},"pids":{"limit":10}}`, "pids (twice)"},
		{"an overlong list", string(long), "linux.resources.blockIO.throttleReadBpsDevice"},
	} {
		r := bulkhead(t, c.doc, nil, "--root", root, "update", "--resources", "-", id)
		if r.code == 0 || !strings.Contains(r.stderr, c.names) {
			t.Errorf("update --resources with %s: exit %d, want a refusal naming %q:\n%s", c.what, r.code, c.names, r.stderr)
		}
		if l, err := g.Limits(); err != nil || l.PidsMax != 64 {
			t.Errorf("update --resources with %s: pids.max %s (%v), want 64 kept", c.what, cgroups.String(l.PidsMax), err)
		}
	}

	path := filepath.Join(t.TempDir(), "process.json")
	if err := os.WriteFile(path, []byte(`{"args":["/bin/true"],"cwd":"/","user":{"uid":65534,"gid":65534},"rlimitz":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := bulkhead(t, "", nil, "--root", root, "exec", "--process", path, id)
	if r.code == 0 || !strings.Contains(r.stderr, "rlimitz") {
		t.Errorf("exec --process with an unknown member: exit %d, want a refusal naming it:\n%s", r.code, r.stderr)
	}
	// What a reader of the file sees first is not what would run.
	if err := os.WriteFile(path, []byte(`{"args":["/bin/true"],"cwd":"/","user":{"uid":65534,"gid":65534},"ARGS":["/bin/id"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r = bulkhead(t, "", nil, "--root", root, "exec", "--process", path, id)
	if r.code == 0 || !strings.Contains(r.stderr, "ARGS") {
		t.Errorf("exec --process with args and ARGS: exit %d, want a refusal naming ARGS:\n%s", r.code, r.stderr)
	}
}

// TestLeftoverCheckSeesCgroups: the leftover check of the other tests
// looks where bulkhead really puts a container's cgroup: it finds the
// cgroup of a running container and not after delete.
func TestLeftoverCheckSeesCgroups(t *testing.T) {
	needRunc(t)
	root, id, dir := running(t, nil)
	cg, left := leftover.Cgroup(dir, root, id)
	if !left {
		t.Fatalf("a running container's cgroup %s was not found", cg)
	}
	must(t, nil, "--root", root, "delete", "--force", id)
	if cg, left := leftover.Cgroup(dir, root, id); left {
		t.Errorf("cgroup %s still there after delete", cg)
	}
}

// TestExecShortLived: an exec that ends at once is not refused for what
// its exit looks like from the host (on cgroup v1 an exiting process shows
// in the root cgroup), attached or detached, and each gets its verdict in
// the audit log: verified, or ended before it could be read. An exec the
// backend cannot start fails with the backend's reason instead of waiting
// for a pid that never comes.
func TestExecShortLived(t *testing.T) {
	needRunc(t)
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	env := []string{"BULKHEAD_CONFIG=" + writeConfig(t, fmt.Sprintf("audit_log = %q\n", auditLog))}
	root, id, _ := running(t, env)
	const rounds = 20
	for i := 0; i < rounds; i++ {
		pidFile := filepath.Join(t.TempDir(), "pid")
		must(t, env, "--root", root, "exec", "--detach", "--pid-file", pidFile, id, "true")
		must(t, env, "--root", root, "exec", id, "true")
	}
	entries, _ := readAudit(t, auditLog)
	verdicts := map[string]int{}
	for _, e := range entries {
		if e.Event == "exec-verify" && e.ID == id {
			verdicts[e.Outcome]++
		}
	}
	if n := verdicts["verified"] + verdicts["ended before verification"]; n != 2*rounds || len(verdicts) > 2 {
		t.Errorf("exec verdicts in the audit log %v, want %d, each verified or ended before verification", verdicts, 2*rounds)
	}
	t.Logf("verdicts: %v", verdicts)
	r := bulkhead(t, "", env, "--root", root, "exec", id, "/no/such/program")
	// A status of its own, not the harness's kill after two minutes (-1).
	if r.code <= 0 {
		t.Fatalf("exec of a missing program: exit %d, want the backend's failure:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "/no/such/program") {
		t.Errorf("exec of a missing program does not name it:\n%s", r.stderr)
	}
}

// TestExecConcurrent: execs into one container at once all succeed. Each
// exec's sweep of the container meets the others' runc inits while they
// set themselves up (capabilities not yet dropped, cgroups not yet
// joined) and must judge them only once they run their process; and it
// meets processes another bulkhead is reading under ptrace, which has one
// tracer at a time.
func TestExecConcurrent(t *testing.T) {
	needRunc(t)
	root, id, _ := running(t, nil)
	const n = 12
	errs := make(chan string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Short ones end before they are read, and their sweeps read
			// every process's filter while the others' bulkheads do too.
			args := []string{"--root", root, "exec", id, "true"}
			switch i % 3 {
			case 0:
				args = []string{"--root", root, "exec", "--detach", id, "sleep", "1"}
			case 1:
				args = []string{"--root", root, "exec", id, "sh", "-c", "sleep 0.3; echo ok"}
			}
			if r := bulkhead(t, "", nil, args...); r.code != 0 {
				errs <- fmt.Sprintf("exec %d: exit %d: %s", i, r.code, r.stderr)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestExecDecoysDoNotStall: processes of the workload that name themselves
// as runc's init are judged at once by an exec's sweep, not waited for as
// a real runc init still setting itself up would be. Twenty of them held
// every exec 10 s each, past the two minutes the harness allows.
func TestExecDecoysDoNotStall(t *testing.T) {
	needRunc(t)
	// Each shell keeps the name it gave itself (an exec would reset it).
	decoys := `for i in $(seq 20); do sh -c 'printf "runc:[2:INIT]" > /proc/$$/comm; while :; do sleep 600; done' & done; wait`
	root, id, _ := running(t, nil, func(s *rspec.Spec) { s.Process.Args = []string{"sh", "-c", decoys} })
	named := 0
	for i := 0; i < 100 && named < 20; i++ {
		named = strings.Count(must(t, nil, "--root", root, "exec", id, "sh", "-c", "cat /proc/[0-9]*/comm"), "runc:[2:INIT]")
		time.Sleep(50 * time.Millisecond)
	}
	if named < 20 {
		t.Fatalf("%d decoys named runc:[2:INIT], want 20", named)
	}
	must(t, nil, "--root", root, "exec", id, "true")
}
