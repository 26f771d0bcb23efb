package probeout

import (
	"testing"
)

// TestStarved: only a run whose cpu row alone has no evidence either way
// is starved; a cpu row that failed on an observation, another control's
// failure or a run without its done line is not.
func TestStarved(t *testing.T) {
	ws := &Workspace{Dir: t.TempDir()}
	pass := `{"control":"pids","pass":true,"result":"pass"}` + "\n"
	done := `{"control":"done"}` + "\n"
	noEvidence := `{"control":"cpu","pass":false,"result":"fail","detail":"no evidence: the quota never throttled the spin within 40s"}` + "\n"
	over := `{"control":"cpu","pass":false,"result":"fail","detail":"cgroup v1: used 2s over 1s: more than the quota allows"}` + "\n"
	other := `{"control":"memory","pass":false,"result":"fail","detail":"no evidence: the child was never killed"}` + "\n"
	for _, c := range []struct {
		name, out string
		want      bool
	}{
		{"cpu without evidence", pass + noEvidence + done, true},
		{"cpu over its quota", pass + over + done, false},
		{"another control too", other + noEvidence + done, false},
		{"no done line", pass + noEvidence, false},
		{"all held", pass + done, false},
	} {
		if got := Starved(c.out, ws); got != c.want {
			t.Errorf("%s: Starved %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCut(t *testing.T) {
	ws := &Workspace{Dir: t.TempDir()}
	pass := `{"control":"pids","pass":true,"result":"pass"}` + "\n"
	done := `{"control":"done"}` + "\n"
	fail := `{"control":"seccomp","pass":false,"result":"fail","detail":"ptrace allowed"}` + "\n"
	for _, c := range []struct {
		name, out string
		want      bool
	}{
		{"stops after held controls", pass + pass, true},
		{"stops after a failed control", pass + fail, false},
		{"ran to its done line", pass + done, false},
		{"no output", "", false},
	} {
		if got := Cut(c.out, ws); got != c.want {
			t.Errorf("%s: Cut %v, want %v", c.name, got, c.want)
		}
	}
}
