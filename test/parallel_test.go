package test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	bhstate "bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestParallelCycles runs 32 create/start/delete cycles at once: the
// records of concurrent creates and deletes must not corrupt each other.
func TestParallelCycles(t *testing.T) {
	needRoot(t, "runc")
	const n = 32
	root := stateRoot(t)
	g := []string{"--root", root}
	bundles := make([]string, n)
	for i := range bundles {
		bundles[i] = bundle.New(t, []string{"sleep", "60"})
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("par-%02d", i)
			for _, step := range [][]string{
				{"create", "--bundle", bundles[i], id},
				{"start", id},
				{"delete", "--force", id},
			} {
				if r := bulkhead(t, "", append(g, step...)...); r.code != 0 {
					errs <- fmt.Errorf("%s %v: exit %d: %s", id, step, r.code, r.stderr)
					bulkhead(t, "", append(g, "delete", "--force", id)...)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "bulkhead"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != bhstate.LockName {
			t.Errorf("left behind in bulkhead's state: %s", e.Name())
		}
	}
	for i := 0; i < n; i++ {
		assertGone(t, root, "runc", fmt.Sprintf("par-%02d", i))
	}
}
