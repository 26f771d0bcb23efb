package specs

import (
	"fmt"
	"reflect"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// ruleSpecFields is the default-deny floor under every other rule: each
// value the caller set is looked up in Fields, and a value in a Denied
// field, or in a field the table does not classify, is refused. The other
// classes are enforced by the rule each entry names.
func ruleSpecFields(c *Context, s *rspec.Spec) []Decision {
	ds := refuseUnclassified(reflect.ValueOf(s), "")
	// The one allowlisted value the table names for this rule.
	if l := s.Linux; l != nil && l.Personality != nil && l.Personality.Domain != rspec.PerLinux {
		ds = append(ds, Decision{Rule: "spec_fields", Field: "linux.personality.domain", Action: Refused,
			Before: string(l.Personality.Domain), Layer: LayerNone,
			Why: "LINUX only: LINUX32 changes what uname and the ABI report; remove linux.personality or set its domain to LINUX"})
	}
	return ds
}

// refuseUnclassified applies the table to v, whose path in the spec is
// prefix ("" for the whole spec, "process" for an exec's process,
// "linux.resources" for an update).
func refuseUnclassified(v reflect.Value, prefix string) []Decision {
	var leaves []setLeaf
	setLeaves(v, prefix, prefix, &leaves)
	var ds []Decision
	seen := map[string]bool{}
	for _, l := range leaves {
		f, ok := Classify(l.Path)
		if ok && f.Class != Denied {
			continue
		}
		if !ok {
			f = FieldClass{Why: "no rule of the policy classifies this field, so it is refused rather than passed through"}
		}
		// One decision per field and element: a refused struct such as
		// linux.intelRdt is named once, not once per member; a refused
		// map's entries each by their key (unified[memory.high]).
		where := l.Where
		if ok && f.Path != l.Path && l.Path != f.Path+"{}" {
			where = truncateTo(l.Where, f.Path)
		}
		if seen[where] {
			continue
		}
		seen[where] = true
		ds = append(ds, Decision{Rule: "spec_fields", Field: where, Action: Refused,
			Before: fmt.Sprint(l.Value.Interface()), Layer: LayerNone,
			Why: f.Why + "; remove " + where + " from the container's configuration"})
	}
	return ds
}

// truncateTo cuts a concrete place (with indexes and keys) down to as many
// path elements as the pattern has.
func truncateTo(where, pattern string) string {
	n := 0
	for _, r := range pattern {
		if r == '.' || r == '[' || r == '{' {
			n++
		}
	}
	seen := 0
	for i, r := range where {
		if r == '.' || r == '[' {
			if seen == n {
				return where[:i]
			}
			seen++
		}
	}
	return where
}
