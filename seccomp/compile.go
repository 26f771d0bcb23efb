package seccomp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

// Sizes from linux/filter.h and linux/bpf_common.h.
const (
	bpfInsnSize = 8    // sizeof(struct sock_filter)
	bpfMaxInsns = 4096 // BPF_MAXINSNS
)

// BPF identifies one BPF program: the SHA-256 of its instructions as the
// kernel stores them (struct sock_filter, host byte order) and their
// number.
type BPF struct {
	Digest string
	Insns  int
}

// Compiled is what libseccomp generates for a profile, in each form a
// backend may load: runc since 1.2 asks libseccomp for a binary tree of
// syscalls (SetOptimize(2)) on profiles of more than 32 names, runc 1.1
// (Debian 12's) for the linear form. runc loads one of them after its own
// -ENOSYS stub, so verification can recognise it in the filter the kernel
// holds (Recognise).
type Compiled struct {
	Forms []BPF
}

// compile builds the libseccomp filter the way runc does (native plus the
// listed architectures, the same rule translation, the same skipping of
// rules that repeat the default action) and generates its BPF, so that a
// profile the backend could not load fails here, before any container
// exists. Nothing is loaded into the kernel.
func compile(spec *filterSpec) (Compiled, error) {
	f, err := buildFilter(spec)
	if err != nil {
		return Compiled{}, err
	}
	defer f.Release()

	c, err := exportBPF(f)
	if err != nil {
		return Compiled{}, fmt.Errorf("seccomp: compile: generating BPF: %w", err)
	}
	if c.Insns == 0 {
		return Compiled{}, errors.New("seccomp: compile: libseccomp generated an empty program")
	}
	// The kernel refuses longer programs (BPF_MAXINSNS) when the backend
	// installs them; say so now rather than at create.
	if c.Insns > bpfMaxInsns {
		return Compiled{}, fmt.Errorf("seccomp: compile: %d BPF instructions, the kernel accepts at most %d", c.Insns, bpfMaxInsns)
	}
	out := Compiled{Forms: []BPF{c}}
	// The linear form, as older runc loads it. Only a program to
	// recognise: a libseccomp that cannot switch back offers none.
	if f.SetOptimize(1) == nil {
		if lin, err := exportBPF(f); err == nil && lin.Insns > 0 && lin != c {
			out.Forms = append(out.Forms, lin)
		}
	}
	return out, nil
}

// buildFilter returns the libseccomp filter for spec; the caller releases it.
func buildFilter(spec *filterSpec) (_ *libseccomp.ScmpFilter, err error) {
	f, err := libseccomp.NewFilter(spec.defaultAction)
	if err != nil {
		return nil, fmt.Errorf("seccomp: compile: default action: %w", err)
	}
	defer func() {
		if err != nil {
			f.Release()
		}
	}()

	// Architectures first: libseccomp adds a rule only to the
	// architectures present when the rule is added.
	for _, a := range spec.arches {
		if err := f.AddArch(a); err != nil {
			return nil, fmt.Errorf("seccomp: compile: architecture %s: %w", a, err)
		}
	}
	// runc turns this on for profiles of more than 32 syscalls (it counts
	// one per name); the same setting gives the same BPF, so a size or shape
	// problem shows up here too. Older libseccomp lacks it, which runc also
	// tolerates.
	names := 0
	for _, r := range spec.rules {
		names += len(r.names)
	}
	if names > 32 {
		_ = f.SetOptimize(2)
	}

	for _, r := range spec.rules {
		// libseccomp refuses a rule whose action is the default one; runc
		// skips such rules, and they change nothing.
		if r.action == spec.defaultAction {
			continue
		}
		for _, name := range r.names {
			// Resolved on the native architecture as runc does;
			// libseccomp translates the number to each architecture.
			nr, err := libseccomp.GetSyscallFromName(name)
			if err != nil {
				return nil, fmt.Errorf("seccomp: compile: syscall %q: %w", name, err)
			}
			if len(r.conds) == 0 {
				err = f.AddRule(nr, r.action)
			} else {
				err = f.AddRuleConditional(nr, r.action, r.conds)
			}
			if err != nil {
				return nil, fmt.Errorf("seccomp: compile: syscall %q action %s: %w", name, r.action, err)
			}
		}
	}

	return f, nil
}

// exportBPF generates the filter's BPF and returns its digest and length.
func exportBPF(f *libseccomp.ScmpFilter) (BPF, error) {
	prog, err := exportProgram(f)
	if err != nil {
		return BPF{}, err
	}
	sum := sha256.Sum256(prog)
	return BPF{Digest: hex.EncodeToString(sum[:]), Insns: len(prog) / bpfInsnSize}, nil
}

// exportProgram generates the filter's BPF through a pipe: a pipe rather
// than a temporary file leaves nothing behind on any path, and
// seccomp_export_bpf_mem needs libseccomp 2.6.
func exportProgram(f *libseccomp.ScmpFilter) ([]byte, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	type result struct {
		prog []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		prog, err := io.ReadAll(r)
		done <- result{prog, err}
	}()
	exportErr := f.ExportBPF(w)
	w.Close()
	res := <-done
	if exportErr != nil {
		return nil, exportErr
	}
	if res.err != nil {
		return nil, res.err
	}
	if len(res.prog)%bpfInsnSize != 0 {
		return nil, fmt.Errorf("libseccomp exported %d bytes, not whole instructions", len(res.prog))
	}
	return res.prog, nil
}
