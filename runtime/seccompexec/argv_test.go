package seccompexec

import (
	"slices"
	"strings"
	"testing"
)

func TestArgvRoundTrip(t *testing.T) {
	prog := []byte{0x20, 0, 0, 0, 4, 0, 0, 0, 0x06, 0, 0, 0, 0, 0, 0xff, 0x7f}
	args := []string{"sh", "-c", "echo -- $0", "--"}
	argv := Argv(args)
	if argv[0] != Path {
		t.Fatalf("argv[0] %q, want %q", argv[0], Path)
	}
	// A caller's variable of the same name is replaced, not kept beside.
	env := Env(prog, []string{"PATH=/bin", EnvName + "=0600000000000000", "HOME=/h"})
	insns, got, rest, err := Parse(argv, env)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, args) {
		t.Errorf("args %q, want %q", got, args)
	}
	if !slices.Equal(rest, []string{"PATH=/bin", "HOME=/h"}) {
		t.Errorf("the workload's environment %q, want the caller's without the filter", rest)
	}
	if len(insns) != 2 || insns[0].Code != 0x20 || insns[0].K != 4 || insns[1].Code != 0x06 || insns[1].K != 0x7fff0000 {
		t.Errorf("instructions %+v", insns)
	}
	if strings.Contains(strings.Join(argv, " "), "0600") {
		t.Errorf("the filter is in argv: %q", argv)
	}
}

// TestParseRefuses: every malformed command line or environment is an
// error, never an empty filter with the command still to run.
func TestParseRefuses(t *testing.T) {
	ok := EnvName + "=0600000000000000"
	for name, c := range map[string]struct{ argv, env []string }{
		"no command":       {[]string{Path, "--"}, []string{ok}},
		"no separator":     {[]string{Path, "true"}, []string{ok}},
		"no filter":        {[]string{Path, "--", "true"}, []string{"PATH=/bin"}},
		"two filters":      {[]string{Path, "--", "true"}, []string{ok, EnvName + "=0600000000000000"}},
		"not hex":          {[]string{Path, "--", "true"}, []string{EnvName + "=zz"}},
		"empty filter":     {[]string{Path, "--", "true"}, []string{EnvName + "="}},
		"half instruction": {[]string{Path, "--", "true"}, []string{EnvName + "=06000000"}},
		"too long":         {[]string{Path, "--", "true"}, []string{EnvName + "=" + strings.Repeat("0600000000000000", maxInsns+1)}},
	} {
		if insns, args, _, err := Parse(c.argv, c.env); err == nil {
			t.Errorf("%s: parsed to %d instructions and %q, want an error", name, len(insns), args)
		}
	}
}
