package seccomp

import (
	"fmt"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
)

// NativeArch returns this machine's architecture by its OCI name and
// whether p lists it. A filter that does not list the native ABI judges
// none of the workload's calls by its rules, only by the bad-arch action.
func NativeArch(p *rspec.LinuxSeccomp) (rspec.Arch, bool, error) {
	native, err := libseccomp.GetNativeArch()
	if err != nil {
		return "", false, fmt.Errorf("seccomp: native architecture: %w", err)
	}
	for name, a := range specArches {
		if a == native {
			return name, slices.Contains(p.Architectures, name), nil
		}
	}
	return "", false, fmt.Errorf("seccomp: native architecture %s has no OCI name runc accepts", native)
}
