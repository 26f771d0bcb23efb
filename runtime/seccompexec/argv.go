package seccompexec

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	// Binary is the program's name next to bulkhead on the host.
	Binary = "bulkhead-seccomp-exec"
	// Path is where bulkhead binds it into a runsc container: below a
	// directory of its own, which no image ships.
	Path = "/.bulkhead/seccomp-exec"
	// separator ends the program's own arguments; the workload's argv
	// follows unchanged.
	separator = "--"
)

// Sizes from linux/filter.h.
const (
	insnSize = 8    // sizeof(struct sock_filter)
	maxInsns = 4096 // BPF_MAXINSNS
)

// EnvName is the variable that carries the filter, in hex, to the
// program, which takes it out of the environment it hands the workload.
// Not an argument: runsc quotes an exec's whole argv in its errors ("failed
// to find initial working directory"), and a filter is kilobytes.
const EnvName = "BULKHEAD_SECCOMP_FILTER"

// Argv is the argument vector that runs args under the filter Env
// carries: the program's path inside the container, the separator, and
// args unchanged (args[0] is resolved inside, as runsc would).
func Argv(args []string) []string {
	return append([]string{Path, separator}, args...)
}

// Env is env with program as EnvName, the only entry of that name.
func Env(program []byte, env []string) []string {
	return append(without(env, EnvName), EnvName+"="+hex.EncodeToString(program))
}

// without is env less every entry named name.
func without(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if n, _, _ := strings.Cut(kv, "="); n != name {
			out = append(out, kv)
		}
	}
	return out
}

// Parse reads the program's argument vector and environment: the filter,
// decoded and checked for shape, the workload's argv, and the environment
// without the filter. Anything but exactly one EnvName is refused: with
// two, which one a reader takes is the reader's choice.
func Parse(argv, env []string) ([]unix.SockFilter, []string, []string, error) {
	if len(argv) < 3 || argv[1] != separator {
		return nil, nil, nil, fmt.Errorf("usage: %s=<BPF program in hex> %s -- <command> [args...]", EnvName, Binary)
	}
	var hexProg []string
	for _, kv := range env {
		if n, v, _ := strings.Cut(kv, "="); n == EnvName {
			hexProg = append(hexProg, v)
		}
	}
	if len(hexProg) != 1 {
		return nil, nil, nil, fmt.Errorf("%d filters in %s, want exactly one", len(hexProg), EnvName)
	}
	raw, err := hex.DecodeString(hexProg[0])
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the filter is not hex: %w", err)
	}
	insns, err := Decode(raw)
	if err != nil {
		return nil, nil, nil, err
	}
	return insns, argv[2:], without(env, EnvName), nil
}

// Decode reads a program of struct sock_filter in host byte order. Only
// its shape is checked; whether the instructions make a valid filter is
// the kernel's (or the Sentry's) to judge when it is installed.
func Decode(raw []byte) ([]unix.SockFilter, error) {
	if len(raw) == 0 {
		return nil, errors.New("the filter is empty")
	}
	if len(raw)%insnSize != 0 {
		return nil, fmt.Errorf("the filter has %d bytes, not whole %d-byte instructions", len(raw), insnSize)
	}
	n := len(raw) / insnSize
	if n > maxInsns {
		return nil, fmt.Errorf("the filter has %d instructions, the kernel accepts at most %d", n, maxInsns)
	}
	insns := make([]unix.SockFilter, n)
	for i := range insns {
		b := raw[i*insnSize:]
		insns[i] = unix.SockFilter{
			Code: binary.NativeEndian.Uint16(b[0:2]),
			Jt:   b[2],
			Jf:   b[3],
			K:    binary.NativeEndian.Uint32(b[4:8]),
		}
	}
	return insns, nil
}
