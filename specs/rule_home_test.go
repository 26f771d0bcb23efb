package specs

import (
	"fmt"
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// mountsAt returns the mounts whose destination is dst.
func mountsAt(s *rspec.Spec, dst string) []rspec.Mount {
	var out []rspec.Mount
	for _, m := range s.Mounts {
		if cleanAbs(m.Destination) == dst {
			out = append(out, m)
		}
	}
	return out
}

func envOf(s *rspec.Spec, name string) []string {
	var out []string
	for _, kv := range s.Process.Env {
		if len(kv) > len(name) && kv[:len(name)+1] == name+"=" {
			out = append(out, kv[len(name)+1:])
		}
	}
	return out
}

func TestRuleHome(t *testing.T) {
	withHome := func(c *Context) { c.Profile.HomeSize = "64m" }
	wantHome := func(action Action) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) {
			t.Helper()
			wantDecision(t, ds, "mounts["+HomeDir+"]", action)
			ms := mountsAt(s, HomeDir)
			if len(ms) != 1 {
				t.Fatalf("%d mounts at %s", len(ms), HomeDir)
			}
			uid, gid := s.Process.User.UID, s.Process.User.GID
			want := []string{"rw", "noexec", "nosuid", "nodev", "size=64m", "mode=0700",
				fmt.Sprintf("uid=%d", uid), fmt.Sprintf("gid=%d", gid)}
			if m := ms[0]; m.Type != "tmpfs" || !slices.Equal(m.Options, want) {
				t.Fatalf("%s = %s %v, want tmpfs %v", HomeDir, m.Type, m.Options, want)
			}
		}
	}
	runRule(t, ruleHome, []ruleCase{
		{name: "default profile: no home", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			if len(ds) != 0 || len(mountsAt(s, HomeDir)) != 0 {
				t.Fatalf("home without home_size: %v", ds)
			}
		}},
		{name: "home added with its variables", ctx: withHome, spec: func(s *rspec.Spec) {
			s.Process.Env = []string{"PATH=/bin"}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantHome(Added)(t, s, ds)
			for _, v := range homeEnv {
				wantDecision(t, ds, "process.env["+v[0]+"]", Added)
				if got := envOf(s, v[0]); !slices.Equal(got, []string{v[1]}) {
					t.Errorf("%s = %v, want [%s]", v[0], got, v[1])
				}
			}
		}},
		{name: "caller's HOME in the read-only root moved to the home", ctx: withHome, spec: func(s *rspec.Spec) {
			s.Process.Env = []string{"HOME=/root", "PATH=/bin"}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantHome(Added)(t, s, ds)
			if got := envOf(s, "HOME"); !slices.Equal(got, []string{HomeDir}) {
				t.Errorf("HOME = %v, want [%s]", got, HomeDir)
			}
			wantDecision(t, ds, "process.env[HOME]", Tightened)
		}},
		{name: "caller's GOPATH and CARGO_HOME in the read-only root moved to the home", ctx: withHome, spec: func(s *rspec.Spec) {
			// The golang and rust images' own values.
			s.Process.Env = []string{"GOPATH=/go:/usr/share/gocode", "CARGO_HOME=/usr/local/cargo", "PATH=/go/bin:/usr/local/cargo/bin:/bin"}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			for name, want := range map[string]string{"GOPATH": HomeDir + "/go", "CARGO_HOME": HomeDir + "/.cargo", "PATH": "/go/bin:/usr/local/cargo/bin:/bin"} {
				if got := envOf(s, name); !slices.Equal(got, []string{want}) {
					t.Errorf("%s = %v, want [%s]", name, got, want)
				}
			}
			wantDecision(t, ds, "process.env[GOPATH]", Tightened)
			wantDecision(t, ds, "process.env[CARGO_HOME]", Tightened)
		}},
		{name: "caller's HOME in a workspace and GOCACHE on its own tmpfs kept", ctx: withHome, spec: func(s *rspec.Spec) {
			s.Process.Env = []string{"HOME=/workspace/.home", "GOCACHE=/work/cache"}
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/work", Type: "tmpfs", Source: "tmpfs"})
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantHome(Added)(t, s, ds)
			if got := envOf(s, "HOME"); !slices.Equal(got, []string{"/workspace/.home"}) {
				t.Errorf("HOME = %v, want the caller's /workspace/.home", got)
			}
			if got := envOf(s, "GOCACHE"); !slices.Equal(got, []string{"/work/cache"}) {
				t.Errorf("GOCACHE = %v, want the caller's", got)
			}
			for _, d := range ds {
				if d.Field == "process.env[HOME]" || d.Field == "process.env[GOCACHE]" {
					t.Errorf("a caller's variable was decided on: %+v", d)
				}
			}
		}},
		{name: "caller bind at the home replaced", ctx: withHome, spec: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: HomeDir + "/", Type: "bind", Source: "/root", Options: []string{"rbind", "rw"}})
		}, want: wantHome(Tightened)},
		{name: "malformed home_size refused", ctx: func(c *Context) { c.Profile.HomeSize = "lots" },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "mounts["+HomeDir+"]", Refused)
			}},
	})
}

// TestApplyProcessHomeAndScratch: an exec'd process (docker exec, ctr task
// exec) gets a job profile's home, caches and scratch as create's process
// does: its environment is the engine's own (HOME=/root, no caches), and
// without them go test failed at once (EROFS on /nonexistent/.cache).
func TestApplyProcessHomeAndScratch(t *testing.T) {
	c := &Context{Profile: testProfile()}
	c.Profile.HomeSize, c.Profile.ScratchSize = "64m", "128m"
	p, ds, err := ApplyProcess(c, &rspec.Process{Args: []string{"go", "test"}, Cwd: "/", Env: []string{"PATH=/bin", "HOME=/root", "GOPATH=/go"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HOME=" + HomeDir, "GOPATH=" + HomeDir + "/go", "GOCACHE=" + HomeDir + "/.cache/go-build", "TMPDIR=" + ScratchDir, "GOTMPDIR=" + ScratchDir} {
		if !slices.Contains(p.Env, want) {
			t.Errorf("exec env %v lacks %s", p.Env, want)
		}
	}
	wantDecision(t, ds, "process.env[HOME]", Tightened)
	wantDecision(t, ds, "process.env[TMPDIR]", Added)

	c.Profile.HomeSize, c.Profile.ScratchSize = "0", "0"
	p, _, err = ApplyProcess(c, &rspec.Process{Args: []string{"sh"}, Cwd: "/", Env: []string{"HOME=/root"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Env, []string{"HOME=/root"}) {
		t.Errorf("a profile with no home or scratch changed the exec env: %v", p.Env)
	}
}
