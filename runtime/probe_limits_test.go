package runtime

import (
	"slices"
	"testing"
)

// TestProbeLimitArgs: the probe is handed the limits of the profile it
// runs under; the default profile's are the probe's own flag defaults
// (cmd/bulkhead-probe/policy.go), so its run is judged as it always was.
func TestProbeLimitArgs(t *testing.T) {
	cfg := selectConfig(t)
	for name, want := range map[string][]string{
		"default":   {"-cpus", "1", "-memory-limit", "268435456", "-pids-limit", "64", "-tmp-size", "16777216"},
		"tests":     {"-cpus", "2", "-memory-limit", "1610612736", "-pids-limit", "256", "-tmp-size", "16777216"},
		"formatter": {"-cpus", "1", "-memory-limit", "536870912", "-pids-limit", "64", "-tmp-size", "16777216"},
	} {
		p, ok := cfg.Profiles[name]
		if !ok {
			t.Fatalf("no built-in profile %s", name)
		}
		got, err := probeLimitArgs(&p)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, want)
		}
	}
	p := cfg.Profiles["default"]
	p.Memory, p.CPUs, p.PidsLimit = "0", 0, 0
	if got, err := probeLimitArgs(&p); err != nil || !slices.Equal(got, []string{"-cpus", "0", "-memory-limit", "0", "-pids-limit", "0", "-tmp-size", "16777216"}) {
		t.Errorf("a profile without limits: %v, %v; want zeros, which the probe reads as none", got, err)
	}
	p.Memory = "lots"
	if _, err := probeLimitArgs(&p); err == nil {
		t.Errorf("memory %q: no error", p.Memory)
	}
}
