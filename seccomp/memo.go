package seccomp

import (
	"slices"
	"sync"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// profiles remembers, for the life of the process, what ForProfileCompiled
// made of a profile: a create asks for it while applying the rules, while
// recording the filter exec'd processes get and while deriving what to
// verify, and each conversion, ABI pruning and cache lookup took about
// half a millisecond. The key is the profile file's content, not only its
// path, so a file changed between two calls is judged anew; only a
// success is remembered.
var profiles profileMemo

type profileKey struct {
	path, content      string
	compat, execWrites bool
}

type profileMemo struct {
	mu sync.Mutex
	m  map[profileKey]memoEntry
}

type memoEntry struct {
	p *rspec.LinuxSeccomp
	c Compiled
}

// get returns copies: callers put the profile into a spec and may change
// it there.
func (m *profileMemo) get(k profileKey) (*rspec.LinuxSeccomp, Compiled, bool) {
	m.mu.Lock()
	e, ok := m.m[k]
	m.mu.Unlock()
	if !ok {
		return nil, Compiled{}, false
	}
	return cloneSeccomp(e.p), Compiled{Forms: slices.Clone(e.c.Forms)}, true
}

func (m *profileMemo) put(k profileKey, p *rspec.LinuxSeccomp, c Compiled) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[profileKey]memoEntry{}
	}
	m.m[k] = memoEntry{p: cloneSeccomp(p), c: Compiled{Forms: slices.Clone(c.Forms)}}
}

// cloneSeccomp deep-copies p: every slice and pointer of the spec's types
// gets its own copy.
func cloneSeccomp(p *rspec.LinuxSeccomp) *rspec.LinuxSeccomp {
	cp := *p
	cp.DefaultErrnoRet = clonePtr(p.DefaultErrnoRet)
	cp.Architectures = slices.Clone(p.Architectures)
	cp.Flags = slices.Clone(p.Flags)
	cp.Syscalls = slices.Clone(p.Syscalls)
	for i := range cp.Syscalls {
		s := &cp.Syscalls[i]
		s.Names = slices.Clone(s.Names)
		s.ErrnoRet = clonePtr(s.ErrnoRet)
		s.Args = slices.Clone(s.Args)
	}
	return &cp
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
