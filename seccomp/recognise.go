package seccomp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Classic BPF opcode fields (linux/bpf_common.h).
const (
	bpfClass = 0x07
	bpfLD    = 0x00
	bpfJMP   = 0x05
	bpfRET   = 0x06
	bpfSrc   = 0x18 // BPF_RVAL for BPF_RET: K or A
	bpfK     = 0x00
	bpfOp    = 0xf0
	bpfJA    = 0x00
	bpfW     = 0x00
	bpfABS   = 0x20
)

// Recognise reports whether prog, a filter read from the kernel, is the
// program c identifies, possibly after a prefix that can only deny more:
// runc prepends a stub that answers -ENOSYS to syscalls newer than the
// profile and falls through to libseccomp's program for everything else.
// The prefix may load into A, jump forward within itself or to the
// program's start, and return only a denying action (errno, trap, kill);
// it cannot return allow, log, trace or a user notification, nor reach
// into the middle of the program. So whatever the prefix does, the filter
// allows no syscall that the compiled program denies. The error says
// where prog differs.
func (c Compiled) Recognise(prog []unix.SockFilter) error {
	if len(c.Forms) == 0 {
		return fmt.Errorf("no compiled program to compare with")
	}
	var why []string
	for _, f := range c.Forms {
		err := f.recognise(prog)
		if err == nil {
			return nil
		}
		why = append(why, err.Error())
	}
	return errors.New(strings.Join(why, "; "))
}

func (c BPF) recognise(prog []unix.SockFilter) error {
	if c.Insns <= 0 {
		return fmt.Errorf("no compiled program to compare with")
	}
	if len(prog) < c.Insns {
		return fmt.Errorf("%d instructions, the compiled program alone has %d", len(prog), c.Insns)
	}
	start := len(prog) - c.Insns
	if got := digest(prog[start:]); got != c.Digest {
		return fmt.Errorf("its last %d instructions have sha256 %.12s, the compiled program %.12s", c.Insns, got, c.Digest)
	}
	for i, in := range prog[:start] {
		switch in.Code & bpfClass {
		case bpfLD:
			if in.Code != bpfLD|bpfW|bpfABS {
				return fmt.Errorf("prefix instruction %d: code %#x is no load of seccomp data into A", i, in.Code)
			}
		case bpfJMP:
			targets := []int{i + 1 + int(in.Jt), i + 1 + int(in.Jf)}
			if in.Code&bpfOp == bpfJA {
				targets = []int{i + 1 + int(in.K)}
			}
			for _, t := range targets {
				if t > start {
					return fmt.Errorf("prefix instruction %d jumps to %d, inside the compiled program starting at %d", i, t, start)
				}
			}
		case bpfRET:
			if in.Code&bpfSrc != bpfK {
				return fmt.Errorf("prefix instruction %d returns a computed action", i)
			}
			if !denying(in.K) {
				return fmt.Errorf("prefix instruction %d returns action %#x, which does not deny", i, in.K)
			}
		default:
			return fmt.Errorf("prefix instruction %d: code %#x is neither load, jump nor return", i, in.Code)
		}
	}
	return nil
}

// denying tells whether a seccomp return value refuses the syscall.
func denying(ret uint32) bool {
	switch ret & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_KILL_PROCESS, unix.SECCOMP_RET_KILL_THREAD, unix.SECCOMP_RET_TRAP, unix.SECCOMP_RET_ERRNO:
		return true
	}
	return false
}

// digest is the SHA-256 of prog in the layout libseccomp exports and the
// kernel stores: struct sock_filter in host byte order.
func digest(prog []unix.SockFilter) string {
	h := sha256.New()
	var b [bpfInsnSize]byte
	for _, in := range prog {
		binary.NativeEndian.PutUint16(b[0:], in.Code)
		b[2], b[3] = in.Jt, in.Jf
		binary.NativeEndian.PutUint32(b[4:], in.K)
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}
