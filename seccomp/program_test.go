package seccomp

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestProgramIsTheCompiledForm: the program a process installs on itself
// is the very form compile digests for the same profile, so a filter
// installed this way is recognised like the one a backend loads.
func TestProgramIsTheCompiledForm(t *testing.T) {
	p, c, err := ForProfileCompiled("", false, false)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Program(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(prog)
	if got := hex.EncodeToString(sum[:]); got != c.Forms[0].Digest || len(prog)/bpfInsnSize != c.Forms[0].Insns {
		t.Errorf("program %s (%d instructions), want the compiled form %s (%d)", got, len(prog)/bpfInsnSize, c.Forms[0].Digest, c.Forms[0].Insns)
	}
}
