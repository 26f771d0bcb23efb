package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/runtime/seccompexec"
	"bulkhead.dev/bulkhead/specs"
)

// execFilterFile is the plan's ExecFilter in bulkhead's own bundle,
// beside the config.json runsc was given: the handed spec carries the
// filter as runsc's converter needs it (backend.TranslateForGVisor),
// which libseccomp cannot compile again.
const execFilterFile = "seccomp-exec.bpf"

// execUnderFilter makes the policed process of a runsc exec start through
// bulkhead-seccomp-exec (see plan_seccomp_exec.go) with the filter create
// compiled for the container: runsc itself gives an exec'd process no
// filter. The program installs it inside the sandbox before the
// workload's first instruction, or the workload does not run. handed is
// the bundle runsc was given, s its spec.
func execUnderFilter(handed string, s *rspec.Spec, p *rspec.Process) (specs.Decision, error) {
	const rule, field = "seccomp", "process.args"
	prog, err := os.ReadFile(filepath.Join(handed, execFilterFile))
	if !hasSeccompExec(s) || errors.Is(err, fs.ErrNotExist) {
		return specs.Decision{}, fmt.Errorf("%s: the container was created without %s, so an exec'd process would run with no seccomp filter; recreate it", field, seccompexec.Path)
	}
	if err != nil {
		return specs.Decision{}, fmt.Errorf("%s: the container's seccomp filter: %w", field, err)
	}
	if len(p.Args) == 0 {
		return specs.Decision{}, fmt.Errorf("%s: empty", field)
	}
	p.Args = seccompexec.Argv(p.Args)
	p.Env = seccompexec.Env(prog, p.Env)
	return specs.Decision{Rule: rule, Field: field, Action: specs.Tightened,
		After: fmt.Sprintf("%s -- args, with the container's filter (%d bytes of BPF) in %s", seccompexec.Path, len(prog), seccompexec.EnvName), Layer: specs.LayerSeccomp,
		Why: "runsc gives an exec'd process no seccomp filter: it starts through bulkhead's program, which installs the container's filter inside the sandbox and only then executes the args"}, nil
}

// hasSeccompExec tells whether create bound the program into s.
func hasSeccompExec(s *rspec.Spec) bool {
	for _, m := range s.Mounts {
		if m.Destination == seccompexec.Path && specs.IsBind(m) {
			return true
		}
	}
	return false
}
