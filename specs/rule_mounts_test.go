package specs

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func addMount(m rspec.Mount) func(s *rspec.Spec) {
	return func(s *rspec.Spec) { s.Mounts = append(s.Mounts, m) }
}

func TestRuleMounts(t *testing.T) {
	refused := func(field string) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, field, Refused) }
	}
	runRule(t, ruleMounts, []ruleCase{
		{name: "host disk", spec: addMount(rspec.Mount{Destination: "/mnt", Type: "ext4", Source: "/dev/sda1"}), want: refused("mounts[/mnt]")},
		{name: "fuse", spec: addMount(rspec.Mount{Destination: "/mnt", Type: "fuse.sshfs", Source: "host:/"}), want: refused("mounts[/mnt]")},
		{name: "overlay", spec: addMount(rspec.Mount{Destination: "/mnt", Type: "overlay", Source: "overlay", Options: []string{"lowerdir=/"}}), want: refused("mounts[/mnt]")},
		{name: "second proc elsewhere", spec: addMount(rspec.Mount{Destination: "/p", Type: "proc", Source: "proc"}), want: refused("mounts[/p]")},
		{name: "sysfs elsewhere", spec: addMount(rspec.Mount{Destination: "/s", Type: "sysfs", Source: "sysfs"}), want: refused("mounts[/s]")},
		{name: "tmpfs over /proc/sys", spec: addMount(rspec.Mount{Destination: "/proc/sys", Type: "tmpfs", Source: "tmpfs"}), want: refused("mounts[/proc/sys]")},
		{name: "bind over /proc/self/attr", spec: addMount(rspec.Mount{Destination: "/proc/self/attr", Type: "bind", Source: "/srv/x"}), want: refused("mounts[/proc/self/attr]")},
		{name: "bind at /dev", spec: addMount(rspec.Mount{Destination: "/dev", Type: "bind", Source: "/srv/dev"}), want: refused("mounts[/dev]")},
		// runc opens its console's pty through /dev/pts and the image's
		// /dev/ptmx: a directory of links bound there redirects it.
		{name: "bind at /dev/pts", spec: addMount(rspec.Mount{Destination: "/dev/pts", Type: "bind", Source: "/srv/pts"}), want: refused("mounts[/dev/pts]")},
		{name: "bind at /dev/console", spec: addMount(rspec.Mount{Destination: "/dev/console", Type: "bind", Source: "/srv/f"}), want: refused("mounts[/dev/console]")},
		{name: "tmpfs below /dev", spec: addMount(rspec.Mount{Destination: "/dev/x", Type: "tmpfs", Source: "tmpfs"}), want: refused("mounts[/dev/x]")},
		{name: "mqueue at /dev/pts", spec: addMount(rspec.Mount{Destination: "/dev/pts", Type: "mqueue", Source: "mqueue"}), want: refused("mounts[/dev/pts]")},
		{name: "unknown option", spec: addMount(rspec.Mount{Destination: "/data", Type: "bind", Source: "/srv/x", Options: []string{"rbind", "shared"}}), want: refused("mounts[/data]")},
		{name: "idmap option", spec: addMount(rspec.Mount{Destination: "/data", Type: "bind", Source: "/srv/x", Options: []string{"bind", "idmap"}}), want: refused("mounts[/data]")},
		{name: "shared rootfs propagation", spec: func(s *rspec.Spec) { ensureLinux(s).RootfsPropagation = "rshared" }, want: refused("linux.rootfsPropagation")},
		{name: "rbind becomes bind", spec: addMount(rspec.Mount{Destination: "/data", Type: "bind", Source: "/srv/x", Options: []string{"rbind", "ro"}}),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "mounts[/data]", Tightened)
				m := s.Mounts[len(s.Mounts)-1]
				if slices.Contains(m.Options, "rbind") || !slices.Contains(m.Options, "bind") {
					t.Fatalf("options %v", m.Options)
				}
			}},
		{name: "tmpfs exec and huge", spec: addMount(rspec.Mount{Destination: "/scratch", Type: "tmpfs", Source: "tmpfs", Options: []string{"exec", "suid", "dev", "size=1g"}}),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				// 1g is past tmpfs_total, and the refusal says what adds up.
				if d := wantDecision(t, ds, "mounts[tmpfs]", Refused); !strings.Contains(d.Why, "/scratch 1GiB") {
					t.Errorf("the refusal of the tmpfs sum does not name the mounts: %s", d.Why)
				}
				m := s.Mounts[len(s.Mounts)-1]
				for _, o := range []string{"noexec", "nosuid", "nodev"} {
					if !slices.Contains(m.Options, o) {
						t.Errorf("options %v lack %s", m.Options, o)
					}
				}
				for _, o := range execOptions {
					if slices.Contains(m.Options, o) {
						t.Errorf("options %v keep %s", m.Options, o)
					}
				}
			}},
		{name: "tmpfs without size gets one", spec: addMount(rspec.Mount{Destination: "/run", Type: "tmpfs", Source: "tmpfs"}),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "mounts[/run]", Tightened)
				if m := s.Mounts[len(s.Mounts)-1]; !slices.Contains(m.Options, "size=16m") {
					t.Fatalf("options %v", m.Options)
				}
			}},
		// runc joins options with commas; the kernel splits them again.
		{name: "comma inside an option", spec: addMount(rspec.Mount{Destination: "/data", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1k", "mode=1777,size=0"}}),
			want: refused("mounts[/data]")},
		{name: "comma inside a bind option", spec: addMount(rspec.Mount{Destination: "/data", Type: "bind", Source: "/srv/x", Options: []string{"bind", "rw,exec"}}),
			want: refused("mounts[/data]")},
		// The kernel takes the last size=, and 0 means no limit.
		{name: "tmpfs size=0 after a small one", spec: addMount(rspec.Mount{Destination: "/data", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1k", "size=0"}}),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				m := s.Mounts[len(s.Mounts)-1]
				var sizes []string
				for _, o := range m.Options {
					if strings.HasPrefix(o, "size=") {
						sizes = append(sizes, o)
					}
				}
				if !slices.Equal(sizes, []string{"size=16m"}) {
					t.Fatalf("options %v: want the profile's one size, nothing after it", m.Options)
				}
			}},
		{name: "tmpfs two sizes keep the last", spec: addMount(rspec.Mount{Destination: "/data", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=8m", "size=1m"}}),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				m := s.Mounts[len(s.Mounts)-1]
				n := 0
				for _, o := range m.Options {
					if strings.HasPrefix(o, "size=") {
						n++
					}
				}
				if n != 1 || !slices.Contains(m.Options, "size=1m") {
					t.Fatalf("options %v: want size=1m alone", m.Options)
				}
			}},
		{name: "no /dev gets a fresh tmpfs", spec: func(s *rspec.Spec) {
			var kept []rspec.Mount
			for _, m := range s.Mounts {
				if m.Destination != "/dev" {
					kept = append(kept, m)
				}
			}
			s.Mounts = kept
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "mounts[/dev]", Added)
			if s.Mounts[0].Destination != "/dev" || s.Mounts[0].Type != "tmpfs" {
				t.Fatalf("mounts %+v", s.Mounts)
			}
		}},
	})
}

// TestRuleMountsFollowImageLinks: runc resolves a destination through the
// image's symlinks, so a link must not carry a mount the lexical checks
// allow into /proc or /sys, or onto a place the policy lays out. Before
// this, a tmpfs at /lnk/sys/kernel, with /lnk -> /proc in the image, put a
// writable tmpfs inside the read-only /proc/sys of a runc container.
func TestRuleMountsFollowImageLinks(t *testing.T) {
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	for _, d := range []string{"proc", "sys", "tmp", "srv/data", "etc"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustSymlink(t, "/proc", filepath.Join(rootfs, "lnk"))
	mustSymlink(t, "../sys", filepath.Join(rootfs, "etc/up"))
	mustSymlink(t, "/", filepath.Join(rootfs, "top"))
	mustSymlink(t, "/srv/data", filepath.Join(rootfs, "data"))
	// An image that leads its workspace (or any mount) into bulkhead's
	// own directory: a gVisor sandbox's execs started through a link of
	// the mounted checkout, which the job turned into its own program.
	mustSymlink(t, "/.bulkhead", filepath.Join(rootfs, "workspace"))
	mustSymlink(t, "/.bulkhead/", filepath.Join(rootfs, "own"))
	inBundle := func(c *Context) { c.Bundle = bundle }
	tmpfs := func(dst string) rspec.Mount {
		return rspec.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1m"}}
	}
	bind := func(dst string) rspec.Mount {
		return rspec.Mount{Destination: dst, Type: "bind", Source: "/srv", Options: []string{"bind", "ro"}}
	}
	cases := []struct {
		m       rspec.Mount
		refused bool
	}{
		{tmpfs("/lnk/sys/kernel"), true},
		{bind("/lnk/kcore"), true},
		{tmpfs("/etc/up/fs"), true},
		{bind("/top/tmp"), true},
		{tmpfs("/top/dev"), true},
		{bind("/data"), false},
		{tmpfs("/srv/cache"), false},
		{bind("/tmp/inside"), false}, // below the policy's tmpfs, not the image's /tmp
		{bind("/workspace"), true},
		{tmpfs("/own/seccomp-exec"), true},
		{bind("/top/.bulkhead"), true},
		{tmpfs("/.bulkhead/seccomp-exec"), true},
		{bind("//.bulkhead/"), true},
		{tmpfs("/"), true},
		{tmpfs("x/../../.."), true},
		{bind("/top"), true},
	}
	var rc []ruleCase
	for _, tc := range cases {
		rc = append(rc, ruleCase{name: tc.m.Type + " " + tc.m.Destination, ctx: inBundle,
			spec: func(s *rspec.Spec) { s.Mounts = append(s.Mounts, tc.m) },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				d, ok := find(ds, "mounts["+tc.m.Destination+"]")
				if got := ok && d.Action == Refused; got != tc.refused {
					t.Fatalf("refused %v, want %v: %+v", got, tc.refused, d)
				}
			}})
	}
	runRule(t, ruleMounts, rc)
}

// A link in the source of a bind mounted earlier moves a later mount as
// a link in the image does: runc resolves each destination through the
// tree as it stands when it mounts it.
func TestRuleMountsFollowEarlierBindsLinks(t *testing.T) {
	bundle := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bundle, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	checkout := t.TempDir()
	mustSymlink(t, "/sys/kernel", filepath.Join(checkout, "l"))
	mustSymlink(t, "/srv/data", filepath.Join(checkout, "fine"))
	c := testContext()
	c.Bundle = bundle
	for _, tc := range []struct {
		dst     string
		refused bool
	}{
		{"/a/l/debug", true},
		{"/a/fine", false},
	} {
		s := hostileSpec()
		s.Root = &rspec.Root{Path: "rootfs"}
		s.Mounts = append(s.Mounts,
			rspec.Mount{Destination: "/a", Type: "bind", Source: checkout, Options: []string{"bind", "ro"}},
			rspec.Mount{Destination: tc.dst, Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1m"}})
		ds := ruleMounts(c, s)
		d, ok := find(ds, "mounts["+tc.dst+"]")
		if got := ok && d.Action == Refused; got != tc.refused {
			t.Errorf("%s: refused %v, want %v: %+v", tc.dst, got, tc.refused, d)
		}
		if tc.refused && !strings.Contains(d.Why, "a link leads into /sys,") {
			t.Errorf("%s: refusal does not say where it lands: %s", tc.dst, d.Why)
		}
	}
}

// runc lays out /dev, /proc, /sys and /tmp itself, partly through plain
// host paths: an image whose /dev is a link would have runc 1.1 write its
// /dev/ptmx and /dev/fd links into the host directory it names. A mount
// is judged where runc puts it: in depth order (mount_order), through
// links in the image and in earlier binds' sources, inside /tmp and /dev
// too, and a bind's source where the host resolves it.
func TestRuleMountsPlacedAsRuncPlacesThem(t *testing.T) {
	hostDir := t.TempDir()
	checkout := t.TempDir()
	if err := os.Mkdir(filepath.Join(checkout, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "/proc/meminfo", filepath.Join(checkout, "m"))
	mustSymlink(t, "/sys/kernel", filepath.Join(checkout, "k"))
	remountMover := t.TempDir()
	mustSymlink(t, "/data", filepath.Join(remountMover, "x"))
	finalMover := t.TempDir()
	mustSymlink(t, "/p", filepath.Join(finalMover, "q"))
	mustSymlink(t, "/c", filepath.Join(finalMover, "t"))
	c := testContext()
	bind := func(dst, src string) rspec.Mount {
		return rspec.Mount{Destination: dst, Type: "bind", Source: src, Options: []string{"bind", "ro"}}
	}
	tmpfs := func(dst string) rspec.Mount {
		return rspec.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1m"}}
	}
	cases := []struct {
		name   string
		image  map[string]string // links in the rootfs ("": a directory)
		mounts []rspec.Mount
		field  string // the first refused mount, "" for none
	}{
		{"an image whose /dev is a link", map[string]string{"dev": hostDir}, nil, "mounts[/dev]"},
		{"an image whose /dev is a link, with the engine's /dev", map[string]string{"dev": hostDir},
			[]rspec.Mount{{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"mode=755", "size=65536k"}}}, "mounts[/dev]"},
		{"an image whose /tmp is a link", map[string]string{"tmp": "/data"}, []rspec.Mount{tmpfs("/tmp")}, "mounts[/tmp]"},
		{"a child listed before the parent whose source moves it", nil,
			[]rspec.Mount{bind("/data/m", hostDir), tmpfs("/data/k"), bind("/data", checkout)}, "mounts[/data/m]"},
		{"a bind inside /tmp whose source moves the next", nil,
			[]rspec.Mount{tmpfs("/tmp"), bind("/tmp/b", checkout), bind("/tmp/b/m", hostDir)}, "mounts[/tmp/b/m]"},
		{"a bind inside /dev", nil,
			[]rspec.Mount{bind("/dev/b", checkout), tmpfs("/dev/b/k")}, "mounts[/dev/b]"},
		// /proc/1/cwd is runc's working directory while it mounts: the ..
		// after it climb a tree the image does not show.
		{"a link through /proc/1/cwd", map[string]string{"l": "/proc/1/cwd/../../../../../fs"},
			[]rspec.Mount{bind("/l", checkout), bind("/fs", checkout)}, "mounts[/l]"},
		{"a link through /sys", map[string]string{"l": "/sys/dev/char/1:3/../../kernel"}, []rspec.Mount{tmpfs("/l")}, "mounts[/l]"},
		{"a bind that a link puts on /dev/null", map[string]string{"hosts": "/dev/null"}, []rspec.Mount{bind("/hosts", hostDir)}, "mounts[/hosts]"},
		// The image's /p/x -> . puts the mount at /p; the source's own
		// x -> /data then sends runc's ro remount to /data.
		{"a source whose link moves the remount", map[string]string{"p": "", "p/x": "."},
			[]rspec.Mount{bind("/p/x", remountMover)}, "mounts[/p/x]"},
		// The tmpfs lands at /a/t through the image's /p/q -> /a; the
		// later bind at /z/z/p (/p, through z -> .) brings q -> /p and
		// t -> /c, so runc's final read-only remount and verification
		// both look /p/q/t up at /c.
		{"a later mount that moves an earlier one's final lookup",
			map[string]string{"a": "", "c": "", "p": "", "p/q": "/a", "z": "."},
			[]rspec.Mount{tmpfs("/p/q/t"), tmpfs("/c"), bind("/z/z/p", finalMover)}, "mounts[/p/q/t]"},
		// /a/b/c is deeper than /home/sandbox, so it is mounted later,
		// and its link lays it over /home: the home would be hidden.
		{"a later mount that a link lays over an earlier one", map[string]string{"a": "", "a/b": "", "a/b/c": "/home", "home": ""},
			[]rspec.Mount{tmpfs("/home/sandbox"), tmpfs("/a/b/c")}, "mounts[/a/b/c]"},
		{"plain binds", nil, []rspec.Mount{bind("/data", checkout), bind("/data/x", hostDir), tmpfs("/tmp")}, ""},
		// The backend would make /data/new in the checkout, on the host:
		// runc meets the read-only bind, runsc's gofer made it as root.
		{"a bind nested in a bind whose source lacks its mount point", nil,
			[]rspec.Mount{bind("/data", checkout), bind("/data/new", hostDir)}, "mounts[/data/new]"},
		{"a tmpfs nested so", nil, []rspec.Mount{bind("/data", checkout), tmpfs("/data/new/tmp")}, "mounts[/data/new/tmp]"},
		// A workspace is an overlay: its mount points are made in its
		// upper layer.
		{"a mount nested in a workspace", nil, []rspec.Mount{bind("/workspace", checkout), tmpfs("/workspace/new")}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bundle := t.TempDir()
			if err := os.MkdirAll(filepath.Join(bundle, "rootfs", "data"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range slices.Sorted(maps.Keys(tc.image)) {
				if tc.image[name] == "" { // a directory
					if err := os.MkdirAll(filepath.Join(bundle, "rootfs", name), 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				mustSymlink(t, tc.image[name], filepath.Join(bundle, "rootfs", name))
			}
			c.Bundle = bundle
			s := &rspec.Spec{Root: &rspec.Root{Path: "rootfs"}, Mounts: slices.Clone(tc.mounts)}
			var refused []string
			for _, d := range ruleMounts(c, s) {
				if d.Action == Refused {
					refused = append(refused, d.Field+": "+d.Why)
				}
			}
			if tc.field == "" && len(refused) > 0 || tc.field != "" && (len(refused) == 0 || !strings.HasPrefix(refused[0], tc.field+": ")) {
				t.Errorf("refused %q, want %q first", refused, tc.field)
			}
		})
	}
}

// /proc and /sys take only their own filesystems: a tmpfs in place of
// procfs ran on runsc with no /proc at all.
func TestRuleMountsKernelPlacesTakeTheirOwn(t *testing.T) {
	for _, dst := range []string{"/proc", "/sys"} {
		s := hostileSpec()
		s.Mounts = slices.DeleteFunc(s.Mounts, func(m rspec.Mount) bool { return m.Destination == dst })
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1m"}})
		d, ok := find(ruleMounts(testContext(), s), "mounts["+dst+"]")
		if !ok || d.Action != Refused || !strings.Contains(d.Why, "takes only its own kernel filesystem") {
			t.Errorf("a tmpfs at %s: %+v", dst, d)
		}
	}
}
