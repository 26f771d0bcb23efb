package specs

import (
	"reflect"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// unclassified lists the leaf paths of t that no entry of Fields covers.
func unclassified(t reflect.Type) []string {
	var out []string
	for _, p := range LeafPaths(t) {
		if _, ok := Classify(p); !ok {
			out = append(out, p)
		}
	}
	return out
}

// TestEveryFieldClassified walks the runtime-spec's Go types: a field a
// new runtime-spec version adds has no class, fails here, and would be
// refused by spec_fields until someone classifies it.
func TestEveryFieldClassified(t *testing.T) {
	if missing := unclassified(reflect.TypeOf(rspec.Spec{})); len(missing) > 0 {
		t.Fatalf("fields without a class:\n%s", strings.Join(missing, "\n"))
	}
}

func TestSyntheticFieldUnclassified(t *testing.T) {
	type futureLinux struct {
		rspec.Linux
		Landlock *struct {
			Ruleset []string `json:"ruleset"`
		} `json:"landlock,omitempty"`
	}
	type futureSpec struct {
		rspec.Spec
		Linux *futureLinux `json:"linux,omitempty"`
	}
	missing := unclassified(reflect.TypeOf(futureSpec{}))
	if len(missing) != 1 || missing[0] != "linux.landlock.ruleset[]" {
		t.Fatalf("unclassified %v, want only linux.landlock.ruleset[]", missing)
	}
	// And a value in it is refused, naming the field.
	v := futureSpec{Linux: &futureLinux{Landlock: &struct {
		Ruleset []string `json:"ruleset"`
	}{Ruleset: []string{"/"}}}}
	ds := refuseUnclassified(reflect.ValueOf(v), "")
	wantDecision(t, ds, "linux.landlock.ruleset[0]", Refused)
}

// TestFieldsTable: every entry names a real path and a real rule, and
// only Denied entries and judgedWhole cover a subtree.
func TestFieldsTable(t *testing.T) {
	leaves := map[string]bool{}
	for _, p := range LeafPaths(reflect.TypeOf(rspec.Spec{})) {
		leaves[p] = true
	}
	rules := map[string]bool{}
	for _, r := range Rules {
		rules[r.Name] = true
	}
	seen := map[string]bool{}
	for _, f := range Fields {
		if seen[f.Path] {
			t.Errorf("%s classified twice", f.Path)
		}
		seen[f.Path] = true
		if !rules[f.Rule] {
			t.Errorf("%s: rule %q is not in Rules", f.Path, f.Rule)
		}
		switch f.Class {
		case Forced, Clamped, Allowlisted, Denied, Contained:
		default:
			t.Errorf("%s: class %q", f.Path, f.Class)
		}
		if leaves[f.Path] {
			continue
		}
		covers := false
		for l := range leaves {
			if strings.HasPrefix(l, f.Path+".") || strings.HasPrefix(l, f.Path+"[") || strings.HasPrefix(l, f.Path+"{") {
				covers = true
			}
		}
		if !covers {
			t.Errorf("%s is no field of the runtime-spec", f.Path)
		} else if f.Class != Denied && !judgedWhole[f.Path] {
			t.Errorf("%s covers a subtree but is %s: classify its leaves", f.Path, f.Class)
		}
	}
}

// TestDeniedFieldsRefused sets a value in each kind of refused field and
// expects spec_fields to name it.
func TestDeniedFieldsRefused(t *testing.T) {
	one, classID := uint64(1), uint32(0x100001)
	cases := map[string]func(s *rspec.Spec){
		"linux.intelRdt":                      func(s *rspec.Spec) { s.Linux.IntelRdt = &rspec.LinuxIntelRdt{ClosID: "x"} },
		"linux.netDevices":                    func(s *rspec.Spec) { s.Linux.NetDevices = map[string]rspec.LinuxNetDevice{"eth9": {Name: "eth0"}} },
		"linux.resources.unified[memory.max]": func(s *rspec.Spec) { ensureResources(s).Unified = map[string]string{"memory.max": "max"} },
		"linux.resources.network":             func(s *rspec.Spec) { ensureResources(s).Network = &rspec.LinuxNetwork{ClassID: &classID} },
		"linux.resources.cpu.realtimePeriod":  func(s *rspec.Spec) { ensureResources(s).CPU = &rspec.LinuxCPU{RealtimePeriod: &one} },
		"linux.uidMappings":                   func(s *rspec.Spec) { s.Linux.UIDMappings = []rspec.LinuxIDMapping{{HostID: 0, Size: 1}} },
		"linux.timeOffsets":                   func(s *rspec.Spec) { s.Linux.TimeOffsets = map[string]rspec.LinuxTimeOffset{"boottime": {Secs: 1}} },
		"linux.personality.domain": func(s *rspec.Spec) {
			s.Linux.Personality = &rspec.LinuxPersonality{Domain: rspec.PerLinux32}
		},
		"linux.personality.flags[0]": func(s *rspec.Spec) {
			s.Linux.Personality = &rspec.LinuxPersonality{Flags: []rspec.LinuxPersonalityFlag{"ADDR_NO_RANDOMIZE"}}
		},
		"mounts[0].uidMappings":      func(s *rspec.Spec) { s.Mounts[0].UIDMappings = []rspec.LinuxIDMapping{{HostID: 1000, Size: 1}} },
		"process.scheduler.priority": func(s *rspec.Spec) { s.Process.Scheduler = &rspec.Scheduler{Policy: rspec.SchedFIFO, Priority: 99} },
		"process.commandLine":        func(s *rspec.Spec) { s.Process.CommandLine = "cmd.exe" },
		"windows":                    func(s *rspec.Spec) { s.Windows = &rspec.Windows{LayerFolders: []string{"C:"}} },
		"vm":                         func(s *rspec.Spec) { s.VM = &rspec.VM{Kernel: rspec.VMKernel{Path: "/boot/vmlinuz"}} },
	}
	for field, mutate := range cases {
		t.Run(field, func(t *testing.T) {
			s := hostileSpec()
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: "/srv/data"})
			mutate(s)
			ds := ruleSpecFields(testContext(), s)
			wantDecision(t, ds, field, Refused)
			if _, _, err := Apply(testContext(), s); err == nil {
				t.Fatal("Apply accepted the spec")
			}
		})
	}
}
