package seccomp_test

import (
	"slices"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestHugePagesRefused asks for huge pages through mmap and shmget: the
// hugetlb pool is charged to no memory cgroup, so the filter refuses the
// flag (EPERM) on both backends, whatever pool the host has reserved,
// while the same calls for ordinary pages work.
func TestHugePagesRefused(t *testing.T) {
	need(t, "runc", "runsc")
	b := bundle.New(t, []string{"/bin/hugepages"})
	cProgram(t, b, "hugepages")
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			out := newEnv(t, "").run(be.entry, b)
			t.Logf("%s:\n%s", be.name, out)
			lines := strings.Split(out, "\n")
			for _, want := range []string{"mmap-hugetlb errno 1", "shmget-hugetlb errno 1", "mmap-plain ok", "shmget-plain ok"} {
				if !slices.Contains(lines, want) {
					t.Errorf("no line %q", want)
				}
			}
		})
	}
}
