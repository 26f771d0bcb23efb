package seccomp

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRecognise: the compiled program alone or after a denying stub is
// recognised; a prefix that could allow, reach into the program or keep
// state, and a program that differs by one instruction, are not.
func TestRecognise(t *testing.T) {
	body := []unix.SockFilter{
		{Code: bpfLD | bpfW | bpfABS, K: 4},
		{Code: bpfRET | bpfK, K: unix.SECCOMP_RET_ERRNO | 1},
		{Code: bpfRET | bpfK, K: unix.SECCOMP_RET_ALLOW},
	}
	c := Compiled{Forms: []BPF{{Digest: digest(body), Insns: len(body)}}}
	ldNr := unix.SockFilter{Code: bpfLD | bpfW | bpfABS, K: 0}
	// runc's stub: load the number, jump over the -ENOSYS return or take it.
	stub := []unix.SockFilter{ldNr, {Code: bpfJMP | 0x20, Jt: 0, Jf: 1, K: 450}, {Code: bpfRET | bpfK, K: unix.SECCOMP_RET_ERRNO | 38}}
	prog := func(prefix ...unix.SockFilter) []unix.SockFilter {
		return append(append([]unix.SockFilter{}, prefix...), body...)
	}
	for _, ok := range [][]unix.SockFilter{prog(), prog(stub...)} {
		if err := c.Recognise(ok); err != nil {
			t.Errorf("%v not recognised: %v", ok, err)
		}
	}
	changed := prog()
	changed[1].K = unix.SECCOMP_RET_ERRNO | 2
	bad := map[string][]unix.SockFilter{
		"sha256":                     changed,
		"does not deny":              prog(ldNr, unix.SockFilter{Code: bpfRET | bpfK, K: unix.SECCOMP_RET_ALLOW}),
		"computed action":            prog(unix.SockFilter{Code: bpfRET | 0x10}),
		"inside the compiled":        prog(unix.SockFilter{Code: bpfJMP | bpfJA, K: 2}),
		"neither load":               prog(unix.SockFilter{Code: 0x01, K: 7}),        // ldx
		"no load of seccomp":         prog(unix.SockFilter{Code: 0x00 | 0x60, K: 0}), // ld M[0]
		"the compiled program alone": body[1:],
	}
	for want, p := range bad {
		err := c.Recognise(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Recognise = %v", want, err)
		}
	}
}
