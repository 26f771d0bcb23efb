package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/binaries"
)

// TestSeccompShow runs `bulkhead seccomp show` as an operator would, on
// the built-in profile, on gVisor's and on operator files.
func TestSeccompShow(t *testing.T) {
	bin := binaries.Bulkhead(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// An operator's profile that allows unshare, and one with a typo.
	lax := write("lax.json", `{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64"],
		"syscalls":[{"names":["read","write","exit_group","unshare"],"action":"SCMP_ACT_ALLOW"},
		{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","errnoRet":13}]}`)
	typo := write("typo.json", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","wirte"],"action":"SCMP_ACT_ALLOW"}]}`)
	config := write("config.toml", "[profiles.lax]\nseccomp = \""+lax+"\"\n[profiles.typo]\nseccomp = \""+typo+"\"\n")
	configOK := os.Geteuid() == 0 // a config file must be owned by root

	tests := []struct {
		name     string
		args     []string
		config   bool
		runsc    bool
		wantCode int
		stdout   []string
		stderr   string
	}{
		{"default text", []string{"seccomp", "show"}, false, false, 0, []string{
			"profile default, backend runc, seccomp profile built-in",
			"validation, not containment",
			"default action: SCMP_ACT_ERRNO(EPERM)",
			"denied by a rule: 4",
			"bulkhead's denied list (37): all denied",
			"SCMP_ACT_ERRNO(ENOSYS):\n      clone3",
			"SCMP_ACT_ERRNO(ENOSYS):\n      memfd_create memfd_secret",
			"SCMP_ACT_ALLOW if arg0 & 0x7e020000 == 0x0:\n      clone",
		}, ""},
		// A job profile may run what it writes: memfd_create stays.
		{"job profile", []string{"seccomp", "show", "--profile", "tests"}, false, false, 0, []string{
			"profile tests, backend runc",
			"denied by a rule: 2",
		}, ""},
		{"gvisor", []string{"seccomp", "show", "--profile", "gvisor"}, false, true, 0, []string{
			"backend runsc",
			"runsc: [clone3]: SCMP_ACT_ERRNO(ENOSYS) handed over as SCMP_ACT_TRACE",
			"SCMP_ACT_TRACE(ENOSYS):\n      clone3",
			`also named "pselect"`,
		}, ""},
		{"global profile flag", []string{"--profile", "gvisor", "seccomp", "show"}, false, true, 0, []string{"backend runsc"}, ""},
		{"operator file", []string{"seccomp", "show", "--profile", "lax"}, true, false, 0, []string{
			"seccomp profile " + lax,
			"allowed: 4 syscall names",
			"denied by a rule: 4",
			"ALLOWED by this profile: unshare",
			"SCMP_ACT_ERRNO(EACCES):\n      mkdir",
			"SCMP_ACT_ERRNO(ENOSYS):\n      memfd_create memfd_secret",
		}, ""},
		{"misspelt name", []string{"seccomp", "show", "--profile", "typo"}, true, false, 1, nil, `"wirte": unknown to libseccomp`},
		{"unknown profile", []string{"seccomp", "show", "--profile", "nope"}, false, false, 1, nil, `unknown profile "nope"`},
		{"bad format", []string{"seccomp", "show", "--format", "yaml"}, false, false, 1, nil, "want text or json"},
		{"no subcommand", []string{"seccomp"}, false, false, 1, nil, "want a subcommand: show"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.config && !configOK {
				t.Skip("needs root: bulkhead refuses a config file not owned by root")
			}
			if _, err := exec.LookPath("runsc"); tc.runsc && err != nil {
				t.Skip("runsc is not installed (hack/install-deps.sh)")
			}
			args := tc.args
			if tc.config {
				args = append([]string{"--config", config}, args...)
			}
			var env []string
			if !tc.config {
				// The built-in configuration only, whatever the host has.
				env = []string{"BULKHEAD_CONFIG="}
			}
			r := binaries.Cmd{Env: env}.Run(t, bin, args...)
			code, stdout, stderr := r.Code, r.Stdout, r.Stderr
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q: %s", tc.stderr, stderr)
			}
		})
	}
}

// TestSeccompShowJSON: the JSON form carries the LinuxSeccomp the backend
// gets and the counts.
func TestSeccompShowJSON(t *testing.T) {
	cmd := exec.Command(binaries.Bulkhead(t), "seccomp", "show", "--format", "json")
	cmd.Env = append(os.Environ(), "BULKHEAD_CONFIG=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("seccomp show --format json: %v", err)
	}
	var r struct {
		Profile, Backend, Source string
		Allowed, Denied          int
		DeniedList               []string `json:"denied_list"`
		AllowedFromDeniedList    []string `json:"allowed_from_denied_list"`
		Seccomp                  *rspec.LinuxSeccomp
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if r.Profile != "default" || r.Backend != "runc" || r.Source != "built-in" {
		t.Errorf("profile %q backend %q source %q", r.Profile, r.Backend, r.Source)
	}
	if r.Allowed < 280 || r.Denied != 4 {
		t.Errorf("allowed %d denied %d, want 280+ and 4 (clone3, memfd_create, memfd_secret, ptrace)", r.Allowed, r.Denied)
	}
	if len(r.DeniedList) == 0 || r.AllowedFromDeniedList == nil || len(r.AllowedFromDeniedList) != 0 {
		t.Errorf("denied list %v, allowed from it %v", r.DeniedList, r.AllowedFromDeniedList)
	}
	if r.Seccomp == nil || r.Seccomp.DefaultAction != rspec.ActErrno || len(r.Seccomp.Syscalls) < 10 {
		t.Fatalf("seccomp %+v", r.Seccomp)
	}
}
