package seccomp

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Program is the BPF program libseccomp generates for p, as a filter
// installs it (struct sock_filter, host byte order): the first of the
// forms Compiled digests, built the way runc builds it. It is for a
// process that installs the filter on itself (cmd/bulkhead-seccomp-exec),
// where no backend compiles p.
func Program(p *rspec.LinuxSeccomp) ([]byte, error) {
	spec, err := convert(p)
	if err != nil {
		return nil, err
	}
	f, err := buildFilter(spec)
	if err != nil {
		return nil, err
	}
	defer f.Release()
	prog, err := exportProgram(f)
	if err != nil {
		return nil, fmt.Errorf("seccomp: generating BPF: %w", err)
	}
	if n := len(prog) / bpfInsnSize; n == 0 || n > bpfMaxInsns {
		return nil, fmt.Errorf("seccomp: %d BPF instructions, the kernel accepts 1 to %d", n, bpfMaxInsns)
	}
	return prog, nil
}
