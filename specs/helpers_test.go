package specs

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// fakeSeccomp keeps the tests of this package independent of the seccomp
// package's profile, which changes on its own schedule.
func fakeSeccomp(path string, compat, _ bool) (*rspec.LinuxSeccomp, error) {
	if path != "" {
		_, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
	}
	return &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, Architectures: []rspec.Arch{rspec.ArchX86_64},
		Syscalls: []rspec.LinuxSyscall{{Names: []string{"read", "write", "exit_group"}, Action: rspec.ActAllow}}}, nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	seccompForProfile = fakeSeccomp
	seccompValidate = func(*rspec.LinuxSeccomp) error { return nil }
	os.Exit(m.Run())
}

func testProfile() *Profile {
	p := DefaultProfile()
	return &p
}

// Fixture facts of the host the unit tests pretend to run on.
const (
	testID        = "3f4e6a1c9b2d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f"
	testSandboxID = "8d2f6c4a0b1e3d5f7a9c8b6d4e2f0a1c3b5d7e9f8a6c4b2d0e1f3a5c7b9d8e6f"
	testLayer     = "9c1d0e3b7a9c1d0e3b7a9c1d0e3b7a9c1d0e3b7a9c1d0e3b7a9c1d0e3b7a1234"
	// testEtcLayer is dockerd's record of a layer for container
	// testEtcID, and at its path an overlay of the host's /etc.
	testEtcID    = "e7c0e7c0e7c0e7c0e7c0e7c0e7c0e7c0e7c0e7c0e7c0e7c0e7c0e7c0e7c0e7c0"
	testEtcLayer = "e7c1a7e2e7c1a7e2e7c1a7e2e7c1a7e2e7c1a7e2e7c1a7e2e7c1a7e2e7c1a7e2"
	testPod      = "7f3c0d9e-1111-2222-3333-444455556666"
)

// testHost is a host on which every path is as written (no symlinks), no
// socket exists except those named *.sock, and dockerd made layer
// testLayer for container testID.
var testHost = &Host{
	Resolve: func(p string) (string, error) { return cleanAbs(p), nil },
	FindChannel: func(p string) (string, error) {
		if strings.HasSuffix(p, ".sock") {
			return p, nil
		}
		return "", nil
	},
	// Directories are root's 0755 but those named shared*, 1777 as
	// /tmp, group* (root's, 2775 of group 100) and private* (uid 1500's,
	// 0700).
	DirInfo: func(p string) (unix.Stat_t, error) {
		switch base := filepath.Base(p); {
		case strings.HasPrefix(base, "shared"):
			return unix.Stat_t{Mode: unix.S_IFDIR | 0o1777}, nil
		case strings.HasPrefix(base, "group"):
			return unix.Stat_t{Mode: unix.S_IFDIR | 0o2775, Gid: 100}, nil
		case strings.HasPrefix(base, "private"):
			return unix.Stat_t{Mode: unix.S_IFDIR | 0o700, Uid: 1500, Gid: 1500}, nil
		}
		return unix.Stat_t{Mode: unix.S_IFDIR | 0o755}, nil
	},
	MountedFrom: func(p string, _ int) (MountSource, error) {
		const volumes = "/var/lib/docker/volumes/"
		root := &mountinfo.Info{Mountpoint: "/", Root: "/", FSType: "ext4", Source: "/dev/vda1"}
		ovl := &mountinfo.Info{Mountpoint: volumes + "overlay-volume/_data", Root: "/", FSType: "overlay", Source: "overlay"}
		switch {
		case strings.HasPrefix(p, volumes+"etc-volume/"):
			bind := &mountinfo.Info{Mountpoint: volumes + "etc-volume/_data", Root: "/etc", FSType: "ext4", Source: "/dev/vda1"}
			return MountSource{Holder: bind, Places: []Place{{Path: "/etc", Mount: root}}}, nil
		case strings.HasPrefix(p, volumes+"overlay-volume/"):
			return MountSource{Holder: ovl}, nil
		case strings.HasPrefix(p, volumes+"via-overlay-volume/"):
			// A bind of the overlay volume's data.
			bind := &mountinfo.Info{Mountpoint: volumes + "via-overlay-volume/_data", Root: "/", FSType: "overlay", Source: "overlay"}
			return MountSource{Holder: bind, Places: []Place{{Path: ovl.Mountpoint, Mount: ovl}}}, nil
		case strings.HasPrefix(p, volumes+"other-shm/"):
			// A bind of another container's /dev/shm.
			shm := &mountinfo.Info{Mountpoint: "/var/lib/docker/containers/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/mounts/shm", Root: "/", FSType: "tmpfs"}
			bind := &mountinfo.Info{Mountpoint: volumes + "other-shm/_data", Root: "/", FSType: "tmpfs"}
			return MountSource{Holder: bind, Places: []Place{{Path: shm.Mountpoint, Mount: shm}}}, nil
		case p == "/var/lib/docker/overlay2/"+testEtcLayer+"/merged":
			return MountSource{Holder: &mountinfo.Info{Mountpoint: p, Root: "/", FSType: "overlay", Source: "overlay",
				VFSOptions: "lowerdir+=/etc"}}, nil
		case strings.HasPrefix(p, "/var/lib/kubelet/pods/7f3c0d9e-1111-2222-3333-444455556666/volume-subpaths/"):
			// The pod's subPath bind of another pod's secrets.
			other := &mountinfo.Info{Mountpoint: "/var/lib/kubelet/pods/00000000-other-pod/volumes/kubernetes.io~secret/token", Root: "/", FSType: "tmpfs"}
			bind := &mountinfo.Info{Mountpoint: p, Root: "/", FSType: "tmpfs"}
			return MountSource{Holder: bind, Places: []Place{{Path: other.Mountpoint, Mount: other}}}, nil
		}
		return MountSource{Holder: root}, nil
	},
	// Every path is on the one mount of its fixture, as written.
	OneMount: func(...string) bool { return true },
	// testID's engine files are its engine's (engine_task_test.go
	// tests the tie).
	EngineTask: func(string, string) bool { return true },
	DockerMountID: func(_, id string) (string, error) {
		switch id {
		case testID:
			return testLayer, nil
		case testEtcID:
			return testEtcLayer, nil
		}
		return "", os.ErrNotExist
	},
}

func testContext() *Context {
	return &Context{Profile: testProfile(), Bundle: "/bundle", ID: testID, Host: testHost,
		JoinableSandbox: func(id string) bool { return id == testSandboxID },
		// The sandbox testSandboxID is a CRI engine's, made for testPod.
		KubeletPod:  func(uid string) bool { return uid == testPod },
		MadeByCRI:   func() bool { return true },
		CgroupTaken: func(p string) (bool, error) { return p == "/system-busy", nil },
		// Groups whose children hold processes: the engines' parents,
		// another tenant's parent and a pod's.
		CgroupPopulated: func(p string) (bool, error) {
			switch p {
			case "/docker", "/k8s.io", "/kubepods", "/kubepods/burstable", "/kubepods/burstable/podA", "/kubepods/burstable/podB", "/tenant":
				return true, nil
			}
			return false, nil
		}}
}

// hostileSpec asks for everything the default profile takes away.
func hostileSpec() *rspec.Spec {
	all := []string{"CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SYS_PTRACE", "CAP_DAC_OVERRIDE"}
	return &rspec.Spec{
		Version: rspec.Version,
		Root:    &rspec.Root{Path: "rootfs"},
		Process: &rspec.Process{
			Args: []string{"sh"}, Cwd: "/", Env: []string{"PATH=/bin"},
			User: rspec.User{UID: 0, GID: 0, AdditionalGids: []uint32{0, 10}},
			Capabilities: &rspec.LinuxCapabilities{Bounding: all, Effective: all, Inheritable: all,
				Permitted: all, Ambient: all},
		},
		Mounts: []rspec.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "rw"}},
			{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"rw"}},
		},
		Linux: &rspec.Linux{},
	}
}

func find(ds []Decision, field string) (Decision, bool) {
	for _, d := range ds {
		if d.Field == field {
			return d, true
		}
	}
	return Decision{}, false
}

func wantDecision(t *testing.T, ds []Decision, field string, a Action) Decision {
	t.Helper()
	d, ok := find(ds, field)
	if !ok {
		t.Fatalf("no decision for %s in %s", field, dump(ds))
	}
	if d.Action != a {
		t.Fatalf("%s: action %s, want %s (%+v)", field, d.Action, a, d)
	}
	if d.Rule == "" || d.Why == "" || d.Layer == "" {
		t.Fatalf("%s: incomplete decision %+v", field, d)
	}
	return d
}

func dump(ds []Decision) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\n  " + d.Rule + " " + d.Field + " " + string(d.Action) + " " + d.Before + " -> " + d.After)
	}
	return b.String()
}

type ruleCase struct {
	name string
	ctx  func(c *Context)
	spec func(s *rspec.Spec)
	want func(t *testing.T, s *rspec.Spec, ds []Decision)
}

func runRule(t *testing.T, rule func(*Context, *rspec.Spec) []Decision, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testContext()
			if tc.ctx != nil {
				tc.ctx(c)
			}
			s := hostileSpec()
			if tc.spec != nil {
				tc.spec(s)
			}
			ds := rule(c, s)
			tc.want(t, s, ds)
		})
	}
}
