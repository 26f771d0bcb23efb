package seccomp

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// allows reports whether p lets one call run on a 64-bit architecture:
// some allowing rule names it and all of that rule's conditions hold (they
// are ANDed), or no rule does and the default action allows. It ignores
// precedence between allowing and denying rules for the same call, which
// Default never mixes.
func allows(p *rspec.LinuxSeccomp, name string, args ...uint64) bool {
	var a [6]uint64
	copy(a[:], args)
	for _, r := range p.Syscalls {
		if !hasName(r.Names, name) || !matches(r.Args, a) {
			continue
		}
		if r.Action == rspec.ActAllow || r.Action == rspec.ActLog {
			return true
		}
	}
	return p.DefaultAction == rspec.ActAllow || p.DefaultAction == rspec.ActLog
}

func matches(conds []rspec.LinuxSeccompArg, a [6]uint64) bool {
	for _, c := range conds {
		v := a[c.Index]
		var ok bool
		switch c.Op {
		case rspec.OpNotEqual:
			ok = v != c.Value
		case rspec.OpLessThan:
			ok = v < c.Value
		case rspec.OpLessEqual:
			ok = v <= c.Value
		case rspec.OpEqualTo:
			ok = v == c.Value
		case rspec.OpGreaterEqual:
			ok = v >= c.Value
		case rspec.OpGreaterThan:
			ok = v > c.Value
		case rspec.OpMaskedEqual:
			ok = v&c.Value == c.ValueTwo
		}
		if !ok {
			return false
		}
	}
	return true
}

func hasName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// rulesFor returns the rules of p that name the syscall.
func rulesFor(p *rspec.LinuxSeccomp, name string) []rspec.LinuxSyscall {
	var out []rspec.LinuxSyscall
	for _, r := range p.Syscalls {
		if hasName(r.Names, name) {
			out = append(out, r)
		}
	}
	return out
}
