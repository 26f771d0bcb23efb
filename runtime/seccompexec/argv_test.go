package seccompexec

import (
	"slices"
	"strings"
	"testing"
)

func TestArgvRoundTrip(t *testing.T) {
	prog := []byte{0x20, 0, 0, 0, 4, 0, 0, 0, 0x06, 0, 0, 0, 0, 0, 0xff, 0x7f}
	args := []string{"sh", "-c", "echo -- $0", "--"}
	argv := Argv(prog, args)
	if argv[0] != Path {
		t.Fatalf("argv[0] %q, want %q", argv[0], Path)
	}
	insns, got, err := Parse(argv)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, args) {
		t.Errorf("args %q, want %q", got, args)
	}
	if len(insns) != 2 || insns[0].Code != 0x20 || insns[0].K != 4 || insns[1].Code != 0x06 || insns[1].K != 0x7fff0000 {
		t.Errorf("instructions %+v", insns)
	}
}

// TestParseRefuses: every malformed command line is an error, never an
// empty filter with the command still to run.
func TestParseRefuses(t *testing.T) {
	for name, argv := range map[string][]string{
		"no command":       {Path, "0600000000000000", "--"},
		"no separator":     {Path, "0600000000000000", "true"},
		"not hex":          {Path, "zz", "--", "true"},
		"empty filter":     {Path, "", "--", "true"},
		"half instruction": {Path, "06000000", "--", "true"},
		"too long":         {Path, strings.Repeat("0600000000000000", maxInsns+1), "--", "true"},
	} {
		if insns, args, err := Parse(argv); err == nil {
			t.Errorf("%s: parsed to %d instructions and %q, want an error", name, len(insns), args)
		}
	}
}
