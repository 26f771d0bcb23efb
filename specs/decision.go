package specs

import (
	"fmt"
	"strings"
)

// Action says what a rule did to one field of the caller's spec.
type Action string

const (
	Kept      Action = "kept"
	Tightened Action = "tightened"
	Added     Action = "added"
	Removed   Action = "removed"
	Refused   Action = "refused"
)

// Layer names the kernel mechanism that enforces a decision once the
// container runs. A decision without a layer is validation only: bulkhead
// checked something, nothing in the kernel holds it.
type Layer string

const (
	LayerCapabilities Layer = "capabilities"
	LayerNoNewPrivs   Layer = "no_new_privs"
	LayerDAC          Layer = "DAC"
	LayerReadOnly     Layer = "read-only mount"
	LayerTmpfs        Layer = "tmpfs"
	LayerMountFlags   Layer = "mount flags"
	LayerMasked       Layer = "masked mounts"
	LayerDevices      Layer = "device cgroup"
	LayerNetns        Layer = "netns"
	LayerNamespaces   Layer = "namespaces"
	LayerSeccomp      Layer = "seccomp"
	LayerPids         Layer = "pids cgroup"
	LayerMemory       Layer = "memory cgroup"
	LayerCPU          Layer = "cpu cgroup"
	LayerIO           Layer = "blkio/io cgroup"
	LayerRlimit       Layer = "rlimit"
	LayerEgressBroker Layer = "egress broker"
	LayerNone         Layer = "validation only"
)

// Decision records one rule's verdict on one field, for the audit record,
// `bulkhead check` and refusal messages.
type Decision struct {
	Rule   string `json:"rule"`
	Field  string `json:"field"`
	Action Action `json:"action"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	Layer  Layer  `json:"layer"`
	Why    string `json:"why"`
}

// RefusalError is returned when at least one rule refused the spec. Its
// message names the policy, each refused field and what the operator can do.
type RefusalError struct {
	Profile   string
	Decisions []Decision
}

func (e *RefusalError) Error() string {
	var parts []string
	for _, d := range e.Decisions {
		if d.Action != Refused {
			continue
		}
		what := d.Field
		if d.Before != "" {
			what += " " + d.Before
		}
		parts = append(parts, fmt.Sprintf("policy %q refuses %s (rule %s: %s)", e.Profile, what, d.Rule, d.Why))
	}
	return strings.Join(parts, "; ")
}
