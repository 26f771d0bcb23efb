package specs

import (
	"path"
	"slices"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func ensureProcess(s *rspec.Spec) *rspec.Process {
	if s.Process == nil {
		s.Process = &rspec.Process{}
	}
	return s.Process
}

func ensureLinux(s *rspec.Spec) *rspec.Linux {
	if s.Linux == nil {
		s.Linux = &rspec.Linux{}
	}
	return s.Linux
}

func ensureResources(s *rspec.Spec) *rspec.LinuxResources {
	l := ensureLinux(s)
	if l.Resources == nil {
		l.Resources = &rspec.LinuxResources{}
	}
	return l.Resources
}

// under reports whether p is dir or lies below it; both must be clean.
func under(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// cleanAbs cleans p as the kernel would see it from "/".
func cleanAbs(p string) string {
	return path.Clean("/" + p)
}

func hasOpt(opts []string, o string) bool { return slices.Contains(opts, o) }

// withoutOpts is a copy of opts without drop.
func withoutOpts(opts []string, drop ...string) []string {
	return slices.DeleteFunc(append([]string{}, opts...), func(o string) bool { return slices.Contains(drop, o) })
}

func i64(v int64) *int64    { return &v }
func u64(v uint64) *uint64  { return &v }
func intp(v int) *int       { return &v }
func fmtInt(v int64) string { return strconv.FormatInt(v, 10) }

func fmtI64p(v *int64) string {
	if v == nil {
		return "unset"
	}
	return fmtInt(*v)
}

func fmtU64p(v *uint64) string {
	if v == nil {
		return "unset"
	}
	return strconv.FormatUint(*v, 10)
}

func fmtList(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ",")
}

// notEnforced is the decision of a control the profile switches off, so
// the record still says that nothing holds it.
func notEnforced(rule, field, before string) Decision {
	return Decision{Rule: rule, Field: field, Action: Kept, Before: before, After: before,
		Layer: LayerNone, Why: "not enforced by this profile"}
}
