package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleAnnotations(t *testing.T) {
	ann := func(kv ...string) func(s *rspec.Spec) {
		return func(s *rspec.Spec) {
			s.Annotations = map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				s.Annotations[kv[i]] = kv[i+1]
			}
		}
	}
	want := func(field string, a Action) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, field, a) }
	}
	runRule(t, ruleAnnotations, []ruleCase{
		{name: "gVisor mount hint", spec: ann("dev.gvisor.spec.mount.data.share", "pod"), want: want("annotations[dev.gvisor.spec.mount.data.share]", Refused)},
		{name: "gVisor flag override", spec: ann("dev.gvisor.flag.network", "host"), want: want("annotations[dev.gvisor.flag.network]", Refused)},
		{name: "systemd property", spec: ann("org.systemd.property.Delegate", "true"), want: want("annotations[org.systemd.property.Delegate]", Refused)},
		{name: "another tenant's sandbox", spec: ann(AnnotationCRIContainerType, "container", AnnotationCRISandboxID, "feedface"),
			want: want("annotations["+AnnotationCRISandboxID+"]", Refused)},
		{name: "own pod's sandbox", spec: ann(AnnotationCRIContainerType, "container", AnnotationCRISandboxID, testSandboxID,
			"io.kubernetes.cri.sandbox-name", "web"), want: want("annotations["+AnnotationCRISandboxID+"]", Kept)},
		// A caller's bundle names the pod's sandbox as the CRI would: the
		// words are the caller's, and join nothing.
		{name: "own pod's sandbox, in a caller's bundle", spec: ann(AnnotationCRIContainerType, "container", AnnotationCRISandboxID, testSandboxID,
			"io.kubernetes.cri.sandbox-name", "web"), ctx: func(c *Context) { c.MadeByCRI = func() bool { return false } },
			want: want("annotations["+AnnotationCRISandboxID+"]", Refused)},
		{name: "a sandbox names itself", spec: ann(AnnotationCRIContainerType, "sandbox", AnnotationCRISandboxID, testID),
			want: want("annotations["+AnnotationCRIContainerType+"]", Kept)},
		{name: "a sandbox naming another", spec: ann(AnnotationCRIContainerType, "sandbox", AnnotationCRISandboxID, testSandboxID),
			want: want("annotations["+AnnotationCRIContainerType+"]", Refused)},
		{name: "image description", spec: ann("org.opencontainers.image.source", "https://example.com"), want: want("annotations[org.opencontainers.image.source]", Kept)},
		{name: "operator's allowlist", spec: ann("example.com/team", "ci"), ctx: func(c *Context) { c.Profile.AnnotationsAllowed = []string{"example.com/*"} },
			want: want("annotations[example.com/team]", Kept)},
	})
}

func TestRuleSchedulingAndLabels(t *testing.T) {
	runRule(t, ruleScheduling, []ruleCase{
		{name: "fifo", spec: func(s *rspec.Spec) { s.Process.Scheduler = &rspec.Scheduler{Policy: rspec.SchedFIFO} },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.scheduler.policy", Refused)
			}},
		{name: "negative nice", spec: func(s *rspec.Spec) { s.Process.Scheduler = &rspec.Scheduler{Policy: rspec.SchedOther, Nice: -20} },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.scheduler.nice", Tightened)
				if s.Process.Scheduler.Nice != 0 {
					t.Fatal("nice kept")
				}
			}},
		{name: "realtime io", spec: func(s *rspec.Spec) { s.Process.IOPriority = &rspec.LinuxIOPriority{Class: rspec.IOPRIO_CLASS_RT} },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.ioPriority.class", Refused)
			}},
	})
	runRule(t, ruleSecurityLabels, []ruleCase{
		{name: "unconfined", spec: func(s *rspec.Spec) { s.Process.ApparmorProfile = "unconfined" },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.apparmorProfile", Refused)
			}},
		{name: "docker-default", spec: func(s *rspec.Spec) { s.Process.ApparmorProfile = "docker-default" },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, "process.apparmorProfile", Kept) }},
		{name: "spc_t", spec: func(s *rspec.Spec) { s.Process.SelinuxLabel = "system_u:system_r:spc_t:s0" },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, "process.selinuxLabel", Refused) }},
	})
	// A container type with a level that is not one container's own.
	for label, ok := range map[string]bool{
		"system_u:system_r:container_t:s0:c123,c456":   true,
		"system_u:system_r:container_t:s0:c5":          true,
		"system_u:system_r:container_t":                true,
		"system_u:system_r:container_t:s0-s0:c0.c1023": false,
		"system_u:system_r:container_t:s0:c0.c1023":    false,
		"system_u:system_r:container_t:s0":             false,
		"system_u:system_r:container_t:s0:c1,c2,c3":    false,
		"system_u:system_r:container_t:s0:c1,":         false,
		"system_u:system_r:container_t:s0-s15:c1,c2":   false,
		"system_u:object_r:container_file_t:s0:c1,c2":  true,
	} {
		for _, field := range []string{"process.selinuxLabel", "linux.mountLabel"} {
			runRule(t, ruleSecurityLabels, []ruleCase{{name: field + " " + label,
				spec: func(s *rspec.Spec) {
					if field == "linux.mountLabel" {
						s.Linux.MountLabel = label
					} else {
						s.Process.SelinuxLabel = label
					}
				},
				want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
					refused := false
					for _, d := range ds {
						refused = refused || d.Field == field && d.Action == Refused
					}
					if refused == ok {
						t.Errorf("%s %s: refused %v, want %v: %+v", field, label, refused, !ok, ds)
					}
				}}})
		}
	}
}

func TestRuleRlimitsAllowlist(t *testing.T) {
	rl := func(typ string, v uint64) func(s *rspec.Spec) {
		return func(s *rspec.Spec) { s.Process.Rlimits = []rspec.POSIXRlimit{{Type: typ, Soft: v, Hard: v}} }
	}
	runRule(t, ruleRlimits, []ruleCase{
		{name: "rtprio", spec: rl("RLIMIT_RTPRIO", 99), want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "process.rlimits[RLIMIT_RTPRIO]", Tightened)
			if s.Process.Rlimits[0].Hard != 0 {
				t.Fatal("RTPRIO kept")
			}
		}},
		{name: "nice 40", spec: rl("RLIMIT_NICE", 40), want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "process.rlimits[RLIMIT_NICE]", Tightened)
		}},
		{name: "unknown", spec: rl("RLIMIT_BOGUS", 1), want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "process.rlimits[RLIMIT_BOGUS]", Refused)
		}},
	})
}
