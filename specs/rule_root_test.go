package specs

import (
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleRoot(t *testing.T) {
	root := func(p string) func(s *rspec.Spec) { return func(s *rspec.Spec) { s.Root = &rspec.Root{Path: p} } }
	want := func(a Action) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, "root.path", a) }
	}
	runRule(t, ruleRoot, []ruleCase{
		{name: "bundle rootfs", spec: root("rootfs"), want: want(Kept)},
		{name: "absolute inside the bundle", spec: root("/bundle/rootfs"), want: want(Kept)},
		{name: "the bundle itself", spec: root("."), want: want(Refused)},
		{name: "escapes the bundle", spec: root("../srv"), want: want(Refused)},
		{name: "host /", spec: root("/"), want: want(Refused)},
		{name: "host /proc/1/root", spec: root("/proc/1/root"), want: want(Refused)},
		{name: "a host directory", spec: root("/var/run"), want: want(Refused)},
		{name: "none", spec: func(s *rspec.Spec) { s.Root = nil }, want: want(Refused)},
		{name: "a bundle anyone may write to", spec: root("x"), ctx: func(c *Context) { c.Bundle = "/shared-tmp" }, want: want(Refused)},
		{name: "below a directory of the bundle anyone may write to", spec: root("shared/x/rootfs"), want: want(Refused)},
		{name: "a rootfs anyone may write to", spec: root("shared-rootfs"), want: want(Kept)},
		{name: "below a directory a group shares", spec: root("group/x"), want: want(Refused)},
		{name: "below a user's private directory", spec: root("private/x"), want: want(Refused)},
		{name: "a user's private directory", spec: root("private"), want: want(Refused)},
		{name: "docker's layer for this container", spec: root("/var/lib/docker/overlay2/" + testLayer + "/merged"), want: want(Kept)},
		{name: "docker's layer of another container", spec: root("/var/lib/docker/overlay2/" + testLayer + "/merged"),
			ctx: func(c *Context) { c.ID = "0123" }, want: want(Refused)},
		{name: "an overlay of the host's /etc at docker's layer", spec: root("/var/lib/docker/overlay2/" + testEtcLayer + "/merged"),
			ctx: func(c *Context) { c.ID = testEtcID }, want: want(Refused)},
		{name: "docker layer without an id (check)", spec: root("/var/lib/docker/overlay2/" + testLayer + "/merged"),
			ctx: func(c *Context) { c.ID = "" }, want: want(Refused)},
	})
}

func TestRuleCgroupsPath(t *testing.T) {
	systemd := func(c *Context) { c.SystemdCgroup = true }
	path := func(p string) func(s *rspec.Spec) { return func(s *rspec.Spec) { ensureLinux(s).CgroupsPath = p } }
	want := func(a Action) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, "linux.cgroupsPath", a) }
	}
	sharedRefused := func(group string) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) {
			d := wantDecision(t, ds, "linux.cgroupsPath", Refused)
			if !strings.Contains(d.Why, "joins the limits of "+group+", which holds another container's processes") {
				t.Fatalf("refused for %q, want it to name %s", d.Why, group)
			}
		}
	}
	parentRefused := func(parent string) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) {
			if d := wantDecision(t, ds, "linux.cgroupsPath", Refused); !strings.Contains(d.Why, parent+" is or holds "+parent+", one of the profile's cgroup_parents") {
				t.Fatalf("refused for %q, want the grouping parent named", d.Why)
			}
		}
	}
	deepRefused := func(t *testing.T, s *rspec.Spec, ds []Decision) {
		if d := wantDecision(t, ds, "linux.cgroupsPath", Refused); !strings.Contains(d.Why, "is 17 groups deep, at most 16") {
			t.Fatalf("refused for %q, want its depth named", d.Why)
		}
	}
	runRule(t, ruleCgroupsPath, []ruleCase{
		{name: "fresh", spec: path("/docker/abc"), want: want(Kept)},
		{name: "holds processes", spec: path("/system-busy"), want: want(Refused)},
		{name: "root", spec: path("/"), want: want(Refused)},
		{name: "dot dot", spec: path("/docker/../system.slice"), want: want(Refused)},
		{name: "relative", spec: path("docker/abc"), want: want(Refused)},
		{name: "a grouping parent", spec: path("/docker"), want: parentRefused("/docker")},
		{name: "above a grouping parent", spec: path("/kubepods"), want: parentRefused("/kubepods")},
		{name: "a systemd grouping parent", spec: path("kubepods.slice:x:y"), ctx: systemd, want: want(Kept)},
		{name: "sixteen deep", spec: path(strings.Repeat("/a", 15) + "/abc"), want: want(Kept)},
		{name: "seventeen deep", spec: path(strings.Repeat("/a", 16) + "/abc"), want: deepRefused},
		{name: "systemd seventeen deep", spec: path(strings.Repeat("a-", 15) + "a.slice:docker:abc"), ctx: systemd, want: deepRefused},
		{name: "a systemd unit's", spec: path("/system.slice/ssh.service"), want: want(Refused)},
		{name: "init.scope", spec: path("/init.scope"), want: want(Refused)},
		{name: "systemd form", spec: path("system.slice:docker:abc"), ctx: systemd, want: want(Kept)},
		{name: "systemd root slice", spec: path("-.slice:docker:abc"), ctx: systemd, want: want(Refused)},
		{name: "systemd form with a path in the slice", spec: path("/bulkhead/victim-1234/x.slice:a:b"), ctx: systemd, want: want(Refused)},
		{name: "systemd form with dot dot", spec: path("../../x.slice:a:b"), ctx: systemd, want: want(Refused)},
		{name: "systemd form under the cgroupfs driver", spec: path("kubepods-burstable-pod1.slice:cri-containerd:abc"),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "linux.cgroupsPath", Tightened)
				if len(ds) != 2 || ds[1].Action != Kept {
					t.Fatalf("translated path not judged: %s", dump(ds))
				}
				if got := s.Linux.CgroupsPath; got != "/kubepods/burstable/pod1/cri-containerd-abc" {
					t.Fatalf("cgroupsPath %q", got)
				}
			}},
		{name: "translated path holds processes", spec: path("system.slice:cri-containerd:abc"),
			ctx: func(c *Context) {
				c.CgroupTaken = func(p string) (bool, error) { return p == "/system/cri-containerd-abc", nil }
			},
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				if len(ds) != 2 || ds[1].Action != Refused {
					t.Fatalf("busy translated path not refused: %s", dump(ds))
				}
			}},
		{name: "translated into bulkhead's parent", spec: path("bulkhead.slice:victim:0a1b2c3d"),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				if len(ds) != 2 || ds[1].Action != Refused {
					t.Fatalf("translated path below /bulkhead not refused: %s", dump(ds))
				}
			}},
		{name: "translated into a unit's name", spec: path("system.slice:ssh:x.service"),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				if len(ds) != 2 || ds[1].Action != Refused {
					t.Fatalf("translated unit name not refused: %s", dump(ds))
				}
			}},
		{name: "systemd form with dot dot under the cgroupfs driver", spec: path("../../x.slice:a:b"), want: want(Refused)},
		{name: "cannot check", spec: path("/docker/abc"), ctx: func(c *Context) { c.CgroupTaken = nil }, want: want(Refused)},
		{name: "bulkhead's own from an earlier create", spec: func(s *rspec.Spec) {
			ensureLinux(s).CgroupsPath = "/bulkhead/old-12345678"
			s.Annotations = map[string]string{AnnotationCgroupsPath: "/bulkhead/old-12345678"}
		}, want: want(Kept)},
		{name: "the annotation does not make another path bulkhead's", spec: func(s *rspec.Spec) {
			ensureLinux(s).CgroupsPath = "/system-busy"
			s.Annotations = map[string]string{AnnotationCgroupsPath: "/system-busy"}
		}, want: want(Refused)},
		{name: "a path bulkhead would choose for another container", spec: path("/bulkhead/victim-0a1b2c3d"), want: want(Refused)},
		{name: "bulkhead's parent itself", spec: path("/bulkhead"), want: want(Refused)},
		{name: "a sibling in another tenant's group", spec: path("/tenant/evil"), want: sharedRefused("/tenant")},
		{name: "a sibling in another pod's group", spec: path("/kubepods/burstable/podB/evil"), want: sharedRefused("/kubepods/burstable/podB")},
		{name: "a container of its own pod", spec: path("/kubepods/burstable/podA/app"),
			ctx: func(c *Context) { c.PodCgroupParent = func() string { return "/kubepods/burstable/podA" } }, want: want(Kept)},
		{name: "its own pod does not open another", spec: path("/kubepods/burstable/podB/evil"),
			ctx:  func(c *Context) { c.PodCgroupParent = func() string { return "/kubepods/burstable/podA" } },
			want: sharedRefused("/kubepods/burstable/podB")},
		{name: "below an empty group", spec: path("/empty/parent/app"), want: want(Kept)},
		{name: "below an engine's parent the profile does not declare", spec: path("/docker/abc"),
			ctx: func(c *Context) { c.Profile.CgroupParents = []string{"/kubepods"} }, want: sharedRefused("/docker")},
		{name: "translated below another pod's group", spec: path("kubepods-burstable-podB.slice:cri-containerd:abc"),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				if len(ds) != 2 || ds[1].Action != Refused || !strings.Contains(ds[1].Why, "joins the limits of /kubepods/burstable/podB,") {
					t.Fatalf("translated path below another pod not refused: %s", dump(ds))
				}
			}},
		{name: "cannot check the groups above", spec: path("/docker/abc"), ctx: func(c *Context) { c.CgroupPopulated = nil }, want: want(Refused)},
	})
}
