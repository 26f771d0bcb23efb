// Package specs is the policy over an OCI runtime spec: profiles, one rule
// per control applied in a fixed order (rule.go), each change recorded as
// a Decision, the classification of every field of the runtime-spec
// (fields.go), and the invariants a handed spec must hold whatever the
// rules did. It reads the host only through what the Context gives it and
// imports nothing of runtime.
package specs
