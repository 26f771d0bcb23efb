package seccomp

import (
	"errors"
	"fmt"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
)

// maxErrno is the largest errno the kernel passes through unchanged
// (MAX_ERRNO); larger SECCOMP_RET_DATA values are not errors to userspace.
const maxErrno = 4095

// alwaysResolved are checked whatever the profile lists: bulkhead runs on
// both, and a name one of them does not know is a typo, not a port.
var alwaysResolved = []libseccomp.ScmpArch{libseccomp.ArchAMD64, libseccomp.ArchARM64}

// filterRule is one OCI syscall rule in libseccomp's terms.
type filterRule struct {
	names  []string
	action libseccomp.ScmpAction
	conds  []libseccomp.ScmpCondition
}

// filterSpec is a whole profile in libseccomp's terms, ready to compile.
type filterSpec struct {
	defaultAction libseccomp.ScmpAction
	arches        []libseccomp.ScmpArch
	rules         []filterRule
}

// Validate checks p the way the backend will load it and then compiles it
// to BPF with libseccomp, without loading it. Every problem found in the
// profile is reported, each naming its field and value. It is validation,
// not containment: the kernel enforces the profile only once the backend
// installs it.
func Validate(p *rspec.LinuxSeccomp) error {
	spec, err := convert(p)
	if err != nil {
		return err
	}
	_, err = compile(spec)
	return err
}

// convert turns p into libseccomp values, refusing anything the backend
// would reject, silently drop or read differently from what it says.
func convert(p *rspec.LinuxSeccomp) (*filterSpec, error) {
	if p == nil {
		return nil, errors.New("seccomp: no profile")
	}
	var errs []error
	spec := &filterSpec{}

	act, err := toAction(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		errs = append(errs, fmt.Errorf("defaultAction: %w", err))
	}
	spec.defaultAction = act

	for i, a := range p.Architectures {
		sa, err := toArch(a)
		if err != nil {
			errs = append(errs, fmt.Errorf("architectures[%d]: %w", i, err))
			continue
		}
		spec.arches = append(spec.arches, sa)
	}

	for i, f := range p.Flags {
		switch f {
		case rspec.LinuxSeccompFlagLog, rspec.LinuxSeccompFlagSpecAllow,
			rspec.LinuxSeccompFlagWaitKillableRecv:
		default:
			errs = append(errs, fmt.Errorf("flags[%d]: unknown flag %q", i, f))
		}
	}
	// A seccomp agent would decide syscalls from outside the boundary,
	// where bulkhead can neither configure nor verify it.
	if p.ListenerPath != "" || p.ListenerMetadata != "" {
		errs = append(errs, errors.New("listenerPath: seccomp agents are not supported"))
	}

	resolveOn, existOn := namesArches(spec.arches)
	for i, call := range p.Syscalls {
		r, err := convertRule(call, resolveOn, existOn)
		if err != nil {
			errs = append(errs, fmt.Errorf("syscalls[%d] %s: %w", i, strings.Join(call.Names, ","), err))
			continue
		}
		spec.rules = append(spec.rules, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	return spec, nil
}

// namesArches returns the architectures every name must resolve on, and
// those at least one of which it must really exist on: the listed ones, or
// the native one when the profile lists none (the OCI default).
func namesArches(listed []libseccomp.ScmpArch) (resolveOn, existOn []libseccomp.ScmpArch) {
	existOn = listed
	if len(existOn) == 0 {
		if native, err := libseccomp.GetNativeArch(); err == nil {
			existOn = []libseccomp.ScmpArch{native}
		}
	}
	resolveOn = append([]libseccomp.ScmpArch{}, alwaysResolved...)
	for _, a := range existOn {
		if !containsArch(resolveOn, a) {
			resolveOn = append(resolveOn, a)
		}
	}
	return resolveOn, existOn
}

func convertRule(call rspec.LinuxSyscall, resolveOn, existOn []libseccomp.ScmpArch) (filterRule, error) {
	var errs []error
	r := filterRule{names: call.Names}
	if len(call.Names) == 0 {
		errs = append(errs, errors.New("names: empty"))
	}
	for _, name := range call.Names {
		if err := checkName(name, resolveOn, existOn); err != nil {
			errs = append(errs, err)
		}
	}
	act, err := toAction(call.Action, call.ErrnoRet)
	if err != nil {
		errs = append(errs, fmt.Errorf("action: %w", err))
	}
	r.action = act

	// runc turns several conditions on one argument into separate rules,
	// i.e. ORs them, while libseccomp and the OCI spec AND them. Such a
	// rule would allow more under runc than it says, so refuse it.
	var seen [6]bool
	for j, arg := range call.Args {
		if arg.Index < uint(len(seen)) {
			if seen[arg.Index] {
				errs = append(errs, fmt.Errorf("args[%d]: second condition on argument %d (runc would OR it with the first; write separate rules)", j, arg.Index))
			}
			seen[arg.Index] = true
		}
		c, err := toCondition(arg)
		if err != nil {
			errs = append(errs, fmt.Errorf("args[%d]: %w", j, err))
			continue
		}
		r.conds = append(r.conds, c)
	}
	return r, errors.Join(errs...)
}

// checkName refuses a name libseccomp does not know on one of resolveOn,
// and a name that is only a pseudo-syscall (negative number) on all of
// existOn, since its rule would be a silent no-op.
func checkName(name string, resolveOn, existOn []libseccomp.ScmpArch) error {
	if name == "" {
		return errors.New("empty syscall name")
	}
	for _, a := range resolveOn {
		if _, err := libseccomp.GetSyscallFromNameByArch(name, a); err != nil {
			return fmt.Errorf("syscall %q: unknown to libseccomp on %s", name, a)
		}
	}
	for _, a := range existOn {
		if nr, _ := libseccomp.GetSyscallFromNameByArch(name, a); nr >= 0 {
			return nil
		}
	}
	return fmt.Errorf("syscall %q: exists on none of the architectures %v", name, existOn)
}

// CheckAction says why act with errnoRet is no action a filter can take:
// missing, unknown, an agent's, or an errno where none is returned.
func CheckAction(act rspec.LinuxSeccompAction, errnoRet *uint) error {
	_, err := toAction(act, errnoRet)
	return err
}

func toAction(act rspec.LinuxSeccompAction, errnoRet *uint) (libseccomp.ScmpAction, error) {
	actions := map[rspec.LinuxSeccompAction]libseccomp.ScmpAction{
		rspec.ActKill:        libseccomp.ActKillThread, // as runc maps it
		rspec.ActKillThread:  libseccomp.ActKillThread,
		rspec.ActKillProcess: libseccomp.ActKillProcess,
		rspec.ActTrap:        libseccomp.ActTrap,
		rspec.ActErrno:       libseccomp.ActErrno,
		rspec.ActTrace:       libseccomp.ActTrace,
		rspec.ActAllow:       libseccomp.ActAllow,
		rspec.ActLog:         libseccomp.ActLog,
	}
	sa, ok := actions[act]
	switch {
	case act == rspec.ActNotify:
		return libseccomp.ActInvalid, fmt.Errorf("%s: seccomp agents are not supported", act)
	case act == "":
		return libseccomp.ActInvalid, errors.New("missing")
	case !ok:
		return libseccomp.ActInvalid, fmt.Errorf("unknown action %q", act)
	}
	if sa != libseccomp.ActErrno && sa != libseccomp.ActTrace {
		if errnoRet != nil {
			return libseccomp.ActInvalid, fmt.Errorf("errnoRet %d set for %s (only %s and %s return one)", *errnoRet, act, rspec.ActErrno, rspec.ActTrace)
		}
		return sa, nil
	}
	// Like runc: ERRNO and TRACE without errnoRet mean EPERM.
	if errnoRet == nil {
		return sa.SetReturnCode(errnoEPERM), nil
	}
	if *errnoRet > maxErrno {
		return libseccomp.ActInvalid, fmt.Errorf("errnoRet %d: above %d", *errnoRet, maxErrno)
	}
	return sa.SetReturnCode(int16(*errnoRet)), nil
}

func toCondition(arg rspec.LinuxSeccompArg) (libseccomp.ScmpCondition, error) {
	ops := map[rspec.LinuxSeccompOperator]libseccomp.ScmpCompareOp{
		rspec.OpNotEqual:     libseccomp.CompareNotEqual,
		rspec.OpLessThan:     libseccomp.CompareLess,
		rspec.OpLessEqual:    libseccomp.CompareLessOrEqual,
		rspec.OpEqualTo:      libseccomp.CompareEqual,
		rspec.OpGreaterEqual: libseccomp.CompareGreaterEqual,
		rspec.OpGreaterThan:  libseccomp.CompareGreater,
		rspec.OpMaskedEqual:  libseccomp.CompareMaskedEqual,
	}
	op, ok := ops[arg.Op]
	if !ok {
		return libseccomp.ScmpCondition{}, fmt.Errorf("op: unknown operator %q", arg.Op)
	}
	if arg.Index > 5 {
		return libseccomp.ScmpCondition{}, fmt.Errorf("index %d: syscalls have arguments 0 to 5", arg.Index)
	}
	// Passed as runc passes them, so that ValueTwo means the same here.
	c, err := libseccomp.MakeCondition(arg.Index, op, arg.Value, arg.ValueTwo)
	if err != nil {
		return c, fmt.Errorf("index %d op %s: %w", arg.Index, arg.Op, err)
	}
	return c, nil
}

// specArches are the architectures runc accepts, by their OCI names.
// libseccomp knows a few more (loongarch64, parisc, ...) that runc would
// refuse at create time, so they are refused here already.
var specArches = map[rspec.Arch]libseccomp.ScmpArch{
	rspec.ArchX86:         libseccomp.ArchX86,
	rspec.ArchX86_64:      libseccomp.ArchAMD64,
	rspec.ArchX32:         libseccomp.ArchX32,
	rspec.ArchARM:         libseccomp.ArchARM,
	rspec.ArchAARCH64:     libseccomp.ArchARM64,
	rspec.ArchMIPS:        libseccomp.ArchMIPS,
	rspec.ArchMIPS64:      libseccomp.ArchMIPS64,
	rspec.ArchMIPS64N32:   libseccomp.ArchMIPS64N32,
	rspec.ArchMIPSEL:      libseccomp.ArchMIPSEL,
	rspec.ArchMIPSEL64:    libseccomp.ArchMIPSEL64,
	rspec.ArchMIPSEL64N32: libseccomp.ArchMIPSEL64N32,
	rspec.ArchPPC:         libseccomp.ArchPPC,
	rspec.ArchPPC64:       libseccomp.ArchPPC64,
	rspec.ArchPPC64LE:     libseccomp.ArchPPC64LE,
	rspec.ArchRISCV64:     libseccomp.ArchRISCV64,
	rspec.ArchS390:        libseccomp.ArchS390,
	rspec.ArchS390X:       libseccomp.ArchS390X,
}

// toArch maps an OCI architecture (SCMP_ARCH_X86_64) to libseccomp's.
func toArch(a rspec.Arch) (libseccomp.ScmpArch, error) {
	sa, ok := specArches[a]
	if !ok {
		return libseccomp.ArchInvalid, fmt.Errorf("unknown architecture %q", a)
	}
	return sa, nil
}

func containsArch(list []libseccomp.ScmpArch, a libseccomp.ScmpArch) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}
