package seccomp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestLoadMobyCaps(t *testing.T) {
	data, err := os.ReadFile("testdata/moby-caps.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadMoby(data, kernelVersion{6, 1})
	if err != nil {
		t.Fatalf("loadMoby = %v", err)
	}
	if err := Validate(p); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	wantArches := []rspec.Arch{rspec.ArchX86_64, rspec.ArchX86, rspec.ArchX32, rspec.ArchAARCH64, rspec.ArchARM}
	if len(p.Architectures) != len(wantArches) {
		t.Errorf("architectures = %v, want %v", p.Architectures, wantArches)
	}
	for _, a := range wantArches {
		if !containsSpecArch(p.Architectures, a) {
			t.Errorf("architectures %v lack %s", p.Architectures, a)
		}
	}
	tests := []struct {
		name  string
		rules int
		why   string
	}{
		{"read", 1, "unconditional"},
		{"getpid", 1, "deprecated name field"},
		{"mount", 0, "includes.caps CAP_SYS_ADMIN"},
		{"unshare", 0, "includes.caps CAP_SYS_ADMIN"},
		{"chroot", 0, "includes.caps CAP_SYS_CHROOT"},
		{"clone", 1, "excludes.caps never matches no capabilities; the s390 variant is for another arch"},
		{"clone3", 1, "excludes.caps"},
		{"arch_prctl", 1, "includes.arches amd64"},
		{"modify_ldt", 0, "an allow rule excluded on arm64 cannot be scoped, so it goes"},
		{"uselib", 1, "a deny rule excluded on amd64 stays everywhere"},
		{"ptrace", 1, "minKernel 4.8 <= 6.1"},
		{"futex_waitv", 0, "minKernel 99.0 > 6.1"},
	}
	for _, tt := range tests {
		if got := len(rulesFor(p, tt.name)); got != tt.rules {
			t.Errorf("%s: %d rules, want %d (%s)", tt.name, got, tt.rules, tt.why)
		}
	}
	if c := rulesFor(p, "clone"); len(c) == 1 && (len(c[0].Args) != 1 || c[0].Args[0].Index != 0) {
		t.Errorf("clone rule = %+v, want the arg0 variant", c[0])
	}
	if c := rulesFor(p, "clone3"); len(c) == 1 && (c[0].ErrnoRet == nil || *c[0].ErrnoRet != 38) {
		t.Errorf("clone3 rule = %+v, want errnoRet 38", c[0])
	}
}

func TestLoadMobyRefuses(t *testing.T) {
	unknown, err := os.ReadFile("testdata/moby-unknown-key.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, data, want string
	}{
		{"unknown nested key", string(unknown), `"include"`},
		{"unknown top-level key", `{"defaultAction":"SCMP_ACT_ERRNO","defaultErrno":1,"syscalls":[]}`, `"defaultErrno"`},
		{"unknown arg key", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["socket"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":1,"op":"SCMP_CMP_EQ","valeuTwo":2}]}]}`, `"valeuTwo"`},
		{"trailing data", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]} {}`, "after the top-level object"},
		{"not json", `defaultAction: SCMP_ACT_ERRNO`, "invalid character"},
		{"both arch forms", `{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64"],"archMap":[{"architecture":"SCMP_ARCH_X86_64","subArchitectures":null}],"syscalls":[]}`, "both architectures and archMap"},
		{"unknown arch", `{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86-64"],"syscalls":[]}`, `"SCMP_ARCH_X86-64"`},
		{"unknown sub-arch", `{"defaultAction":"SCMP_ACT_ERRNO","archMap":[{"architecture":"SCMP_ARCH_X86_64","subArchitectures":["SCMP_ARCH_I386"]}],"syscalls":[]}`, `"SCMP_ARCH_I386"`},
		{"unknown rule arch", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","includes":{"arches":["amd46"]}}]}`, `"amd46"`},
		{"bad minKernel", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","includes":{"minKernel":"4"}}]}`, `"4"`},
		{"name and names", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"name":"read","names":["write"],"action":"SCMP_ACT_ALLOW"}]}`, "both name and names"},
	}
	for _, tt := range tests {
		_, err := loadMoby([]byte(tt.data), kernelVersion{6, 1})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: loadMoby = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestForProfileFile(t *testing.T) {
	p, err := ForProfile("testdata/moby-caps.json", false, false)
	if err != nil {
		t.Fatalf("ForProfile = %v", err)
	}
	if len(rulesFor(p, "mount")) != 0 {
		t.Error("mount kept despite includes.caps")
	}

	bad := filepath.Join(t.TempDir(), "typo.json")
	typo := `{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64"],"syscalls":[{"names":["read","opnat"],"action":"SCMP_ACT_ALLOW"}]}`
	if err := os.WriteFile(bad, []byte(typo), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		bad:                              `"opnat"`,
		"testdata/moby-unknown-key.json": `"include"`,
		"testdata/missing.json":          "no such file",
	} {
		_, err := ForProfile(path, false, false)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "seccomp profile") {
			t.Errorf("ForProfile(%s) = %v, want an error containing %q", path, err, want)
		}
	}
}

func TestRunningKernel(t *testing.T) {
	k, err := runningKernel()
	if err != nil {
		t.Fatal(err)
	}
	if k.major < 3 {
		t.Errorf("runningKernel = %+v", k)
	}
}

func FuzzLoadMoby(f *testing.F) {
	for _, name := range []string{"testdata/moby-caps.json", "testdata/moby-unknown-key.json"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := loadMoby(data, kernelVersion{6, 1})
		if err != nil {
			return
		}
		// Whatever parses must either validate or fail cleanly.
		_ = Validate(p)
	})
}
