package runtime

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/runtime/seccompexec"
	"bulkhead.dev/bulkhead/runtime/workspace"
	"bulkhead.dev/bulkhead/specs"
	"bulkhead.dev/bulkhead/test/bundle"
)

// planCase is one bundle given to both check and create.
type planCase struct {
	name    string
	profile string // "" for the configuration's default
	dir     string
}

// capturedBundles turns the specs the engines sent (test/capture) into
// bundles: placeholders become paths below tmp, and the bind sources and
// root filesystems they name are made, so that what is judged is the
// engine's spec and not a missing file.
func capturedBundles(t *testing.T, tmp, id string) []planCase {
	t.Helper()
	files, err := filepath.Glob("../test/capture/testdata/*.spec.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured specs (%v)", err)
	}
	var out []planCase
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".spec.json")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := strings.NewReplacer("<data>", filepath.Join(tmp, "data"), "<containerd-dir>", filepath.Join(tmp, "containerd"),
			"<docker-dir>", filepath.Join(tmp, "docker"), "<sandbox-id>", "sb-"+id, "<app-id>", id, "<id>", id,
			"<hex64>", strings.Repeat("ab", 32), "<log-dir>", filepath.Join(tmp, "log"))
		var s rspec.Spec
		if err := json.Unmarshal([]byte(r.Replace(string(data))), &s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		dir := filepath.Join(tmp, "bundles", name)
		if err := bundle.Rootfs(filepath.Join(dir, "rootfs")); err != nil {
			t.Fatal(err)
		}
		if s.Root != nil && filepath.IsAbs(s.Root.Path) {
			if err := bundle.Rootfs(s.Root.Path); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range s.Mounts {
			if !specs.IsBind(m) || !strings.HasPrefix(m.Source, tmp) {
				continue
			}
			makeSource(t, m.Source)
		}
		writeSpec(t, dir, &s)
		out = append(out, planCase{name: "captured/" + name, dir: dir})
	}
	return out
}

func makeSource(t *testing.T, path string) {
	t.Helper()
	switch filepath.Base(path) {
	case "hostname", "hosts", "resolv.conf":
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeSpec(t *testing.T, dir string, s *rspec.Spec) {
	t.Helper()
	data, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostileBundles ask for what the policy forbids or rewrites: root with
// every capability, the host's namespaces, a writable workspace, an
// engine socket, a lifetime annotation, and the same under gVisor.
func hostileBundles(t *testing.T, tmp string) []planCase {
	t.Helper()
	// A checkout as a CI user leaves it: owned by an id workspace_owners
	// names, readable by others.
	ws := filepath.Join(tmp, "workspace-src")
	makeSource(t, ws)
	if err := os.Chown(ws, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	greedy := func(s *rspec.Spec) {
		s.Process.User = rspec.User{UID: 0, GID: 0, AdditionalGids: []uint32{0, 42}}
		all := []string{"CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SYS_PTRACE", "CAP_DAC_OVERRIDE"}
		s.Process.Capabilities = &rspec.LinuxCapabilities{Bounding: all, Effective: all, Permitted: all, Inheritable: all, Ambient: all}
		s.Process.NoNewPrivileges = false
		s.Process.Env = append(s.Process.Env, "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
		s.Root.Readonly = false
		s.Linux.Namespaces = []rspec.LinuxNamespace{{Type: rspec.PIDNamespace}, {Type: rspec.MountNamespace}, {Type: rspec.UTSNamespace}}
		s.Linux.Resources = &rspec.LinuxResources{Pids: &rspec.LinuxPids{Limit: ptr(int64(100000))}}
		s.Linux.Seccomp = nil
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: ws, Options: []string{"rbind", "rw"}})
		s.Annotations = map[string]string{AnnotationMaxLifetime: "24h"}
	}
	// root's own checkout: workspace_owners does not name root.
	rootWS := filepath.Join(tmp, "workspace-root")
	makeSource(t, rootWS)
	rootCheckout := func(s *rspec.Spec) {
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: rootWS, Options: []string{"rbind", "rw"}})
	}
	socket := func(s *rspec.Spec) {
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/var/run/docker.sock", Type: "bind", Source: "/var/run/docker.sock", Options: []string{"rbind"}})
	}
	bad := func(s *rspec.Spec) {
		s.Process.Cwd = "/proc/self/cwd"
		s.Linux.Sysctl = map[string]string{"kernel.panic": "1"}
	}
	// Fails the backend's own validation (a hostname sysctl without a UTS
	// namespace), which audit mode records and hands over anyway.
	backendInvalid := func(s *rspec.Spec) {
		s.Linux.Sysctl = map[string]string{"kernel.domainname": "x"}
		s.Linux.Namespaces = slices.DeleteFunc(s.Linux.Namespaces, func(n rspec.LinuxNamespace) bool { return n.Type == rspec.UTSNamespace })
	}
	mk := func(name string, mutate func(*rspec.Spec)) string {
		dir := filepath.Join(tmp, "bundles", name)
		if err := bundle.Make(dir, []string{"true"}, mutate); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return []planCase{
		{name: "hostile/greedy", dir: mk("greedy", greedy)},
		{name: "hostile/greedy-gvisor", profile: "gvisor", dir: mk("greedy-gvisor", greedy)},
		{name: "hostile/greedy-audit", profile: "watch", dir: mk("greedy-audit", greedy)},
		{name: "hostile/engine-socket", dir: mk("engine-socket", socket)},
		{name: "hostile/root-checkout", dir: mk("root-checkout", rootCheckout)},
		{name: "hostile/proc-cwd", dir: mk("proc-cwd", bad)},
		{name: "hostile/backend-invalid-audit", profile: "watch", dir: mk("backend-invalid-audit", backendInvalid)},
	}
}

func ptr[T any](v T) *T { return &v }

// TestCheckAndCreatePlanAlike runs `check` and create's preparation on
// the same bundles under the same id and asserts that they decide the
// same, and that check shows the very spec create hands over (cgroups
// path, gVisor translation and workspace overlays included). check runs
// first: create rewrites the bundle's config.json.
func TestCheckAndCreatePlanAlike(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("create pins host paths and mounts workspaces with bind and overlay mounts: needs root")
	}
	tmp := t.TempDir()
	audit := filepath.Join(tmp, "audit.log")
	cfg := writeTestConfig(t, "audit_log = \""+audit+"\"\n\n[profiles.default]\nbind_roots = [\""+tmp+"\"]\n\n"+
		"[profiles.gvisor]\nbind_roots = [\""+tmp+"\"]\n\n[profiles.watch]\nmode = \"audit\"\n")
	const id = "plan-alike"
	// Any file of root's that passes for bulkhead-seccomp-exec: these
	// containers are planned and prepared, never run.
	own := seccompExecSource
	seccompExecSource = func() (string, error) { return bundle.Busybox, nil }
	t.Cleanup(func() { seccompExecSource = own })
	cases := append(capturedBundles(t, tmp, id), hostileBundles(t, tmp)...)
	var accepted, refused, gvisorTranslated, workspaces, cgroupsChosen int
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Globals{Root: filepath.Join(tmp, "root-"+strings.ReplaceAll(c.name, "/", "-")), Profile: c.profile}
			g.SetConfig(cfg, true)
			specPath, bundleDir, err := CheckTarget(c.dir, "")
			if err != nil {
				t.Fatal(err)
			}
			report, plan, err := planAndReport(g, specPath, bundleDir, id)
			if err != nil {
				t.Fatal(err)
			}
			auditBefore := len(auditLines(t, audit))
			created, err := prepare(g, "create", id, c.dir, "")
			if err != nil {
				refused++
				if report.Runs {
					t.Fatalf("check says it runs, create refused: %v", err)
				}
				if plan.Refusal() == nil || plan.Refusal().Error() != err.Error() {
					t.Fatalf("create refused with %q, the plan with %v", err, plan.Refusal())
				}
				lines := auditLines(t, audit)
				if len(lines) != auditBefore+1 {
					t.Fatalf("audit log has %d new lines, want 1", len(lines)-auditBefore)
				}
				assertSameDecisions(t, report.Decisions, lines[len(lines)-1].Decisions)
				return
			}
			defer func() {
				cause := errors.New("test done")
				if err := created.undo(cause); err != cause {
					t.Errorf("undo: %v", err)
				}
			}()
			accepted++
			if !report.Runs {
				t.Fatalf("create accepted, check says it would refuse: %v", report.Refusals)
			}
			assertSameDecisions(t, report.Decisions, created.audit.Decisions)
			if argv, _ := created.plan.BackendArgv("create", noValues{}); !reflect.DeepEqual(argv, report.Argv) {
				t.Fatalf("backend argv: create %q, check %q", argv, report.Argv)
			}
			if !bytes.Equal(plan.HandedJSON, created.plan.HandedJSON) {
				t.Fatalf("handed spec differs:\ncheck:  %s\ncreate: %s", plan.HandedJSON, created.plan.HandedJSON)
			}
			if plan.Enforce() {
				// What the backend will read is what check showed, byte
				// for byte, pins included.
				handed, err := os.ReadFile(filepath.Join(created.plan.HandOverBundle, "config.json"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(handed, plan.HandedJSON) {
					t.Fatalf("the private bundle's config.json differs from the spec check planned:\n%s\n%s", handed, plan.HandedJSON)
				}
				if len(plan.Pins) == 0 || !hasDecision(report.Decisions, "root", "root.path") {
					t.Error("no pin planned, or no decision for the root's pin")
				}
				// The caller's bundle is never written.
				after, err := os.ReadFile(filepath.Join(c.dir, "config.json"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(after, created.original) {
					t.Fatal("create changed the caller's config.json")
				}
			}
			l := created.handed.Linux
			if plan.Enforce() && l != nil && l.CgroupsPath == DefaultCgroupsPath(g.Root, id) {
				cgroupsChosen++
				if !hasDecision(report.Decisions, "cgroups_path", "linux.cgroupsPath") {
					t.Error("bulkhead chose the cgroups path and no decision says so")
				}
			}
			if created.sel.Backend.IsGVisor() && hasDecision(report.Decisions, "pids", "process.rlimits[RLIMIT_NPROC]") {
				gvisorTranslated++
				// Every exec'd process installs the filter through the
				// program bound in, from the file beside config.json.
				if !hasDecision(report.Decisions, "seccomp", "mounts["+seccompexec.Path+"]") || !hasSeccompExec(created.handed) {
					t.Error("a runsc container without bulkhead-seccomp-exec bound in, or no decision for it")
				}
				if prog, err := os.ReadFile(filepath.Join(created.plan.HandOverBundle, execFilterFile)); err != nil || len(prog) == 0 || !bytes.Equal(prog, plan.ExecFilter) {
					t.Errorf("the exec filter beside the handed config.json: %d bytes, %v; want the plan's %d", len(prog), err, len(plan.ExecFilter))
				}
			}
			if len(created.ws) > 0 {
				workspaces++
				// The pins replace the sources once the state directory
				// exists; where each overlay lives is the plan's.
				dirs := func(ws []workspace.Workspace) (out []string) {
					for _, w := range ws {
						out = append(out, w.Destination+" "+w.Dir)
					}
					return out
				}
				if !reflect.DeepEqual(dirs(created.ws), dirs(plan.Workspaces)) {
					t.Fatalf("workspaces: create %+v, check %+v", created.ws, plan.Workspaces)
				}
			}
		})
	}
	// The comparison means something only if both outcomes, and each
	// change made after the rules, were exercised.
	if accepted == 0 || refused == 0 || gvisorTranslated == 0 || workspaces == 0 || cgroupsChosen == 0 {
		t.Fatalf("accepted %d, refused %d, gVisor translated %d, with workspaces %d, cgroups path chosen %d: every kind must occur",
			accepted, refused, gvisorTranslated, workspaces, cgroupsChosen)
	}
}

func assertSameDecisions(t *testing.T, check, create []specs.Decision) {
	t.Helper()
	if len(check) == 0 {
		t.Fatal("no decisions")
	}
	if !reflect.DeepEqual(check, create) {
		a, _ := json.MarshalIndent(check, "", " ")
		b, _ := json.MarshalIndent(create, "", " ")
		t.Fatalf("decisions differ:\ncheck:  %s\ncreate: %s", a, b)
	}
}

func hasDecision(ds []specs.Decision, rule, field string) bool {
	for _, d := range ds {
		if d.Rule == rule && d.Field == field {
			return true
		}
	}
	return false
}

func auditLines(t *testing.T, path string) []audit.Entry {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e audit.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}
