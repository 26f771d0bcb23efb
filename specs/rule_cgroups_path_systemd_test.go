package specs

import (
	"errors"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

const (
	testBurstable = "/kubepods.slice/kubepods-burstable.slice"
	testPodA      = testBurstable + "/kubepods-burstable-podA.slice"
	testPodB      = testBurstable + "/kubepods-burstable-podB.slice"
)

// systemdHost is a systemd host's cgroup tree as the rule sees it: the
// groups that exist and those that hold processes (in them or below).
// Docker's containers and the host's services under system.slice, two
// pods below the kubelet's burstable slice, and a tenant's own slice.
func systemdHost(c *Context) {
	c.SystemdCgroup = true
	exists := map[string]bool{
		"/system.slice": true, "/system.slice/docker-victim.scope": true, "/system.slice/ssh.service": true,
		"/kubepods.slice": true, testBurstable: true, testPodA: true, testPodB: true,
		testPodA + "/cri-containerd-sandboxA.scope": true, testPodB + "/cri-containerd-victim.scope": true, "/tenant.slice": true, "/tenant.slice/app-1.scope": true,
	}
	c.CgroupTaken = func(p string) (bool, error) { return exists[p], nil }
	c.CgroupPopulated = func(p string) (bool, error) {
		for e := range exists {
			if e != p && under(e, p) || e == p && strings.HasSuffix(p, ".scope") {
				return true, nil
			}
		}
		return false, nil
	}
}

// TestRuleCgroupsPathSystemd: under --systemd-cgroup runc joins a scope
// that exists (systemd's "unit exists" is success to it) and the caller
// names the slice above, so a slice:prefix:name is judged as the scope's
// group, /<slice expanded>/<prefix>-<name>.scope, like a cgroupfs path.
func TestRuleCgroupsPathSystemd(t *testing.T) {
	kept := func(scope string) func(t *testing.T, ds []Decision) {
		return func(t *testing.T, ds []Decision) {
			d := wantDecision(t, ds, "linux.cgroupsPath", Kept)
			if !strings.Contains(d.Why, "the systemd scope "+scope+")") {
				t.Fatalf("kept for %q, want it to name the scope %s", d.Why, scope)
			}
		}
	}
	refused := func(why string) func(t *testing.T, ds []Decision) {
		return func(t *testing.T, ds []Decision) {
			d := wantDecision(t, ds, "linux.cgroupsPath", Refused)
			if !strings.Contains(d.Why, why) {
				t.Fatalf("refused for %q, want %q", d.Why, why)
			}
			if !strings.Contains(d.Why, "name a new cgroup for this container") {
				t.Fatalf("refusal %q does not say what to change", d.Why)
			}
		}
	}
	ownPod := func(c *Context) { c.PodCgroupParent = func() string { return testPodA } }
	cases := []struct {
		name, path string
		ctx        func(c *Context)
		want       func(t *testing.T, ds []Decision)
	}{
		{name: "another container's scope", path: "system.slice:docker:victim",
			want: refused("this cgroup (the systemd scope /system.slice/docker-victim.scope) already exists")},
		{name: "another pod's container's scope", path: "kubepods-burstable-podB.slice:cri-containerd:victim",
			want: refused("already exists")},
		{name: "a new scope in another pod's slice", path: "kubepods-burstable-podB.slice:cri-containerd:evil",
			want: refused("joins the limits of " + testPodB + ", which holds another container's processes")},
		{name: "its own pod's slice", path: "kubepods-burstable-podA.slice:cri-containerd:app", ctx: ownPod,
			want: kept(testPodA + "/cri-containerd-app.scope")},
		{name: "its own pod does not open another", path: "kubepods-burstable-podB.slice:cri-containerd:evil", ctx: ownPod,
			want: refused("joins the limits of " + testPodB + ",")},
		{name: "Docker's default parent", path: "system.slice:docker:new", want: kept("/system.slice/docker-new.scope")},
		{name: "a new pod's slice below the QoS slice", path: "kubepods-burstable-podC.slice:cri-containerd:sandbox",
			want: kept(testBurstable + "/kubepods-burstable-podC.slice/cri-containerd-sandbox.scope")},
		{name: "the besteffort slice", path: "kubepods-besteffort.slice:cri-containerd:x",
			want: kept("/kubepods.slice/kubepods-besteffort.slice/cri-containerd-x.scope")},
		{name: "a tenant's slice", path: "tenant.slice:app:2", want: refused("joins the limits of /tenant.slice,")},
		{name: "system.slice when the profile does not declare it", path: "system.slice:docker:new",
			ctx:  func(c *Context) { c.Profile.CgroupParents = []string{"/kubepods.slice"} },
			want: refused("joins the limits of /system.slice,")},
		{name: "a slice name", path: "system.slice:docker:evil.slice", want: refused("a .slice name would be a slice unit")},
		{name: "another pod's slice as the name", path: "kubepods-burstable.slice:x:kubepods-burstable-podB.slice",
			want: refused("ends in .slice")},
		{name: "a service name", path: "system.slice:ssh:x.service", want: refused("ends in .service")},
		{name: "a scope name", path: "system.slice:docker:victim.scope", want: refused("ends in .scope")},
		{name: "an empty part in the slice", path: "a--b.slice:docker:x", want: refused("the slice a--b.slice is not one systemd nests")},
		{name: "a leading dash", path: "-a.slice:docker:x", want: refused("the slice -a.slice is not one systemd nests")},
		{name: "a trailing dash", path: "a-.slice:docker:x", want: refused("is not one systemd nests")},
		{name: "not a slice", path: "system.service:docker:x", want: refused("is not one systemd nests")},
		{name: "the root slice", path: "-.slice:docker:x", want: refused("is the root slice")},
		{name: "a path in the slice", path: "/bulkhead/victim-1234/x.slice:a:b", want: refused("each a plain unit name")},
		{name: "dot dot", path: "../../x.slice:a:b", want: refused("each a plain unit name")},
		{name: "two parts", path: "system.slice:abc", want: refused("slice:prefix:name")},
		{name: "an empty prefix", path: "system.slice::abc", want: refused("slice:prefix:name")},
		{name: "a slice systemd escapes", path: "cpu.slice:docker:x", want: refused("cpu.slice is a name systemd escapes")},
		{name: "a scope systemd escapes", path: "system.slice:_a:b", want: refused("_a-b.scope is a name systemd escapes")},
		{name: "a scope named like a controller", path: "system.slice:bpf:firewall", want: refused("bpf-firewall.scope is a name systemd escapes")},
		{name: "bulkhead's own slice", path: "bulkhead.slice:bulkhead:victim-12345678",
			want: refused("bulkhead.slice holds the scopes bulkhead chooses")},
		{name: "below bulkhead's own slice", path: "bulkhead-x.slice:a:b",
			want: refused("bulkhead.slice holds the scopes bulkhead chooses")},
		{name: "a cgroupfs path", path: "/docker/abc", want: refused("under --systemd-cgroup the backend reads cgroupsPath as slice:prefix:name")},
		{name: "cannot read", path: "system.slice:docker:new",
			ctx:  func(c *Context) { c.CgroupTaken = func(string) (bool, error) { return false, errors.New("EIO") } },
			want: refused("cannot be read (EIO)")},
		{name: "cannot check the groups above", path: "system.slice:docker:new",
			ctx: func(c *Context) { c.CgroupPopulated = nil }, want: refused("cannot be checked here")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testContext()
			systemdHost(c)
			if tc.ctx != nil {
				tc.ctx(c)
			}
			s := hostileSpec()
			ensureLinux(s).CgroupsPath = tc.path
			ds := ruleCgroupsPath(c, s)
			if len(ds) != 1 {
				t.Fatalf("want one decision: %s", dump(ds))
			}
			tc.want(t, ds)
			// The backend reads slice:prefix:name: the spec keeps it.
			if s.Linux.CgroupsPath != tc.path {
				t.Fatalf("cgroupsPath became %q", s.Linux.CgroupsPath)
			}
		})
	}
}

// TestRuleCgroupsPathSystemdAsksForTheScope: the existence and the groups
// above are asked of the scope's cgroupfs path, the one runc's driver
// joins, not of the string the caller wrote.
func TestRuleCgroupsPathSystemdAsksForTheScope(t *testing.T) {
	c := testContext()
	systemdHost(c)
	var taken, populated []string
	c.CgroupTaken = func(p string) (bool, error) { taken = append(taken, p); return false, nil }
	c.CgroupPopulated = func(p string) (bool, error) { populated = append(populated, p); return false, nil }
	s := hostileSpec()
	ensureLinux(s).CgroupsPath = "kubepods-burstable-pod1.slice:cri-containerd:abc"
	wantDecision(t, ruleCgroupsPath(c, s), "linux.cgroupsPath", Kept)
	scope := testBurstable + "/kubepods-burstable-pod1.slice/cri-containerd-abc.scope"
	if strings.Join(taken, " ") != scope {
		t.Fatalf("asked whether %v is taken, want %s", taken, scope)
	}
	// The profile's parents are not asked; the pod's own slice is.
	if got := strings.Join(populated, " "); got != testBurstable+"/kubepods-burstable-pod1.slice" {
		t.Fatalf("asked whether %s hold processes", got)
	}
}

func TestSystemdScopePath(t *testing.T) {
	for in, want := range map[string]string{
		"system.slice:docker:abc":                      "/system.slice/docker-abc.scope",
		"kubepods.slice:cri-containerd:abc":            "/kubepods.slice/cri-containerd-abc.scope",
		"kubepods-burstable-pod1_2.slice:crio:abc":     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1_2.slice/crio-abc.scope",
		"user-1000.slice:session:3":                    "/user.slice/user-1000.slice/session-3.scope",
		"machine.slice:libpod:0123456789abcdef":        "/machine.slice/libpod-0123456789abcdef.scope",
		"system.slice:docker:name.with.dots":           "/system.slice/docker-name.with.dots.scope",
		"kubepods-besteffort.slice:cri-containerd:x@1": "/kubepods.slice/kubepods-besteffort.slice/cri-containerd-x@1.scope",
	} {
		got, err := SystemdScopePath(in)
		if err != nil || got != want {
			t.Errorf("SystemdScopePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestCgroupsPathCgroupfsDriverUnchanged: the systemd form under the
// cgroupfs driver is still translated to the kubelet's cgroupfs names,
// not the systemd driver's scope.
func TestCgroupsPathCgroupfsDriverUnchanged(t *testing.T) {
	c := testContext()
	s := &rspec.Spec{Linux: &rspec.Linux{CgroupsPath: "kubepods-besteffort-pod1.slice:cri-containerd:abc"}}
	ds := ruleCgroupsPath(c, s)
	if len(ds) != 2 || ds[0].Action != Tightened || ds[1].Action != Kept {
		t.Fatalf("decisions %s", dump(ds))
	}
	if s.Linux.CgroupsPath != "/kubepods/besteffort/pod1/cri-containerd-abc" {
		t.Fatalf("cgroupsPath %q", s.Linux.CgroupsPath)
	}
}

// TestCheckSliceParent: a cgroup_parents entry naming a slice must be its
// group where systemd nests it, or it would match nothing the rule judges.
func TestCheckSliceParent(t *testing.T) {
	for _, ok := range DefaultCgroupParents {
		if err := checkSliceParent(ok); err != nil {
			t.Errorf("default %s: %v", ok, err)
		}
	}
	for _, bad := range []string{"/kubepods-burstable.slice", "/kubepods.slice/burstable.slice", "/a--b.slice",
		"/system.slice/docker-1.scope", "/system.slice/x"} {
		if err := checkSliceParent(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestRuleCgroupsPathSystemdEarlierChoice: a scope bulkhead chose for an
// earlier container of the bundle (marked by the annotation) is not the
// caller's: bulkhead chooses a fresh one.
func TestRuleCgroupsPathSystemdEarlierChoice(t *testing.T) {
	c := testContext()
	systemdHost(c)
	s := hostileSpec()
	const p = BulkheadSystemdSlice + ":bulkhead:old-12345678"
	ensureLinux(s).CgroupsPath = p
	s.Annotations = map[string]string{AnnotationCgroupsPath: p}
	ds := ruleCgroupsPath(c, s)
	if d := wantDecision(t, ds, "linux.cgroupsPath", Kept); d.After != "a fresh path" {
		t.Fatalf("decision %+v, want bulkhead to choose a fresh path", d)
	}
}
