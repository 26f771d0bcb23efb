package seccompexec

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

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

// Argv is the argument vector that runs args under program: the
// program's path inside the container, the filter, the separator, and
// args unchanged (args[0] is resolved inside, as runsc would).
func Argv(program []byte, args []string) []string {
	return append([]string{Path, hex.EncodeToString(program), separator}, args...)
}

// Parse splits the program's argument vector into the filter, decoded
// and checked for shape, and the workload's argv.
func Parse(argv []string) ([]unix.SockFilter, []string, error) {
	if len(argv) < 4 || argv[2] != separator {
		return nil, nil, fmt.Errorf("usage: %s <BPF program in hex> -- <command> [args...]", Binary)
	}
	raw, err := hex.DecodeString(argv[1])
	if err != nil {
		return nil, nil, fmt.Errorf("the filter is not hex: %w", err)
	}
	insns, err := Decode(raw)
	if err != nil {
		return nil, nil, err
	}
	return insns, argv[3:], nil
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
