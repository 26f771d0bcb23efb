package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
)

// mobyProfile is the file format of moby's profiles/seccomp (Seccomp).
type mobyProfile struct {
	DefaultAction    rspec.LinuxSeccompAction `json:"defaultAction"`
	DefaultErrnoRet  *uint                    `json:"defaultErrnoRet,omitempty"`
	ListenerPath     string                   `json:"listenerPath,omitempty"`
	ListenerMetadata string                   `json:"listenerMetadata,omitempty"`
	Architectures    []rspec.Arch             `json:"architectures,omitempty"`
	ArchMap          []mobyArch               `json:"archMap,omitempty"`
	Syscalls         []mobySyscall            `json:"syscalls"`
	Flags            []rspec.LinuxSeccompFlag `json:"flags,omitempty"`
}

type mobyArch struct {
	Arch      rspec.Arch   `json:"architecture"`
	SubArches []rspec.Arch `json:"subArchitectures"`
}

type mobySyscall struct {
	Name     string                   `json:"name,omitempty"` // deprecated by moby, still read
	Names    []string                 `json:"names,omitempty"`
	Action   rspec.LinuxSeccompAction `json:"action"`
	ErrnoRet *uint                    `json:"errnoRet,omitempty"`
	Args     []rspec.LinuxSeccompArg  `json:"args"`
	Comment  string                   `json:"comment"`
	Includes *mobyFilter              `json:"includes,omitempty"`
	Excludes *mobyFilter              `json:"excludes,omitempty"`
}

type mobyFilter struct {
	Caps      []string `json:"caps,omitempty"`
	Arches    []string `json:"arches,omitempty"`
	MinKernel string   `json:"minKernel,omitempty"`
}

// targetFamilies are the archMap entries bulkhead keeps, and targetArches
// their members: bulkhead runs on x86_64 and aarch64 hosts.
var (
	targetFamilies = []rspec.Arch{rspec.ArchX86_64, rspec.ArchAARCH64}
	targetArches   = []libseccomp.ScmpArch{
		libseccomp.ArchAMD64, libseccomp.ArchX86, libseccomp.ArchX32,
		libseccomp.ArchARM64, libseccomp.ArchARM,
	}
)

// LoadMoby converts a profile in moby's JSON format into an OCI profile,
// evaluating each rule's includes and excludes as Docker would for a
// container with no capabilities (bulkhead drops them all) on the running
// kernel, for the x86_64 and aarch64 families at once:
//   - includes.caps: the rule is dropped; excludes.caps: the rule is kept.
//   - includes.arches: kept if it names one of x86_64, x86, x32, aarch64,
//     arm; it then applies wherever its syscalls exist (see the package
//     comment).
//   - excludes.arches naming one of those: an OCI rule cannot skip an
//     architecture, so the stricter reading wins: an allowing rule is
//     dropped, a denying one kept everywhere.
//   - minKernel: compared with the running kernel, as Docker does.
//
// Unknown keys, unknown architectures and malformed kernel versions are
// errors. The result is not validated; ForProfile validates it.
func LoadMoby(data []byte) (*rspec.LinuxSeccomp, error) {
	k, err := runningKernel()
	if err != nil {
		return nil, err
	}
	return loadMoby(data, k)
}

type kernelVersion struct{ major, minor int }

func (k kernelVersion) less(o kernelVersion) bool {
	return k.major < o.major || (k.major == o.major && k.minor < o.minor)
}

func loadMoby(data []byte, kernel kernelVersion) (*rspec.LinuxSeccomp, error) {
	var m mobyProfile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("moby profile: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("moby profile: data after the top-level object")
	}

	p := &rspec.LinuxSeccomp{
		DefaultAction:    m.DefaultAction,
		DefaultErrnoRet:  m.DefaultErrnoRet,
		ListenerPath:     m.ListenerPath,
		ListenerMetadata: m.ListenerMetadata,
		Flags:            m.Flags,
	}
	arches, err := mobyArches(m)
	if err != nil {
		return nil, fmt.Errorf("moby profile: %w", err)
	}
	p.Architectures = arches

	for i, s := range m.Syscalls {
		keep, err := keepRule(s, kernel)
		if err != nil {
			return nil, fmt.Errorf("moby profile: syscalls[%d]: %w", i, err)
		}
		if !keep {
			continue
		}
		names := s.Names
		switch {
		case s.Name != "" && len(s.Names) > 0:
			return nil, fmt.Errorf("moby profile: syscalls[%d]: both name and names", i)
		case s.Name != "":
			names = []string{s.Name}
		}
		p.Syscalls = append(p.Syscalls, rspec.LinuxSyscall{
			Names: names, Action: s.Action, ErrnoRet: s.ErrnoRet, Args: s.Args,
		})
	}
	return p, nil
}

// mobyArches flattens archMap (or the older flat list) to the members of
// the target families, refusing names that are no architecture at all.
func mobyArches(m mobyProfile) ([]rspec.Arch, error) {
	if len(m.Architectures) > 0 && len(m.ArchMap) > 0 {
		return nil, errors.New("both architectures and archMap")
	}
	var out []rspec.Arch
	keep := func(field string, a rspec.Arch) error {
		sa, err := toArch(a)
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		if containsArch(targetArches, sa) && !containsSpecArch(out, a) {
			out = append(out, a)
		}
		return nil
	}
	for i, a := range m.Architectures {
		if err := keep(fmt.Sprintf("architectures[%d]", i), a); err != nil {
			return nil, err
		}
	}
	for i, e := range m.ArchMap {
		field := fmt.Sprintf("archMap[%d]", i)
		if _, err := toArch(e.Arch); err != nil {
			return nil, fmt.Errorf("%s.architecture: %w", field, err)
		}
		target := containsSpecArch(targetFamilies, e.Arch)
		for _, a := range append([]rspec.Arch{e.Arch}, e.SubArches...) {
			if _, err := toArch(a); err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			if target {
				if err := keep(field, a); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

func keepRule(s mobySyscall, kernel kernelVersion) (bool, error) {
	if in := s.Includes; in != nil {
		if len(in.Caps) > 0 {
			return false, nil // needs a capability; the set is empty
		}
		if len(in.Arches) > 0 {
			hit, err := namesTarget(in.Arches)
			if err != nil {
				return false, fmt.Errorf("includes.arches: %w", err)
			}
			if !hit {
				return false, nil
			}
		}
		if in.MinKernel != "" {
			min, err := parseKernel(in.MinKernel)
			if err != nil {
				return false, fmt.Errorf("includes.minKernel: %w", err)
			}
			if kernel.less(min) {
				return false, nil
			}
		}
	}
	if ex := s.Excludes; ex != nil {
		// excludes.caps never matches the empty capability set.
		if len(ex.Arches) > 0 {
			hit, err := namesTarget(ex.Arches)
			if err != nil {
				return false, fmt.Errorf("excludes.arches: %w", err)
			}
			if hit && (s.Action == rspec.ActAllow || s.Action == rspec.ActLog) {
				return false, nil
			}
		}
		if ex.MinKernel != "" {
			min, err := parseKernel(ex.MinKernel)
			if err != nil {
				return false, fmt.Errorf("excludes.minKernel: %w", err)
			}
			if !kernel.less(min) {
				return false, nil
			}
		}
	}
	return true, nil
}

// namesTarget reports whether a moby arch list (Go and libseccomp
// spellings: amd64, x86, x32, arm64, arm, s390x, ...) names a target.
func namesTarget(arches []string) (bool, error) {
	hit := false
	for _, a := range arches {
		if a == "386" { // GOARCH spelling, which libseccomp does not know
			a = "x86"
		}
		sa, err := libseccomp.GetArchFromString(a)
		if err != nil {
			return false, fmt.Errorf("unknown architecture %q", a)
		}
		hit = hit || containsArch(targetArches, sa)
	}
	return hit, nil
}

// parseKernel reads moby's "major.minor" kernel versions.
func parseKernel(s string) (kernelVersion, error) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		return kernelVersion{}, fmt.Errorf("kernel version %q: want major.minor", s)
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return kernelVersion{}, fmt.Errorf("kernel version %q: want major.minor", s)
	}
	return kernelVersion{a, b}, nil
}

// runningKernel reads major.minor from uname's release ("6.8.0-45-generic").
func runningKernel() (kernelVersion, error) {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return kernelVersion{}, fmt.Errorf("uname: %w", err)
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	rel := b.String()
	end := strings.IndexFunc(rel, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	if end >= 0 {
		rel = rel[:end]
	}
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return kernelVersion{}, fmt.Errorf("kernel release %q: no major.minor", b.String())
	}
	return parseKernel(parts[0] + "." + parts[1])
}

func containsSpecArch(list []rspec.Arch, a rspec.Arch) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}
