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
	bundles := make([]string, 32)
	for i := range bundles {
		bundles[i] = bundle.New(t, []string{"sleep", "60"})
	}
	parallelCycles(t, bundles, 1)
}

// TestParallelCyclesOneBundle runs them all from one bundle, as a runner
// that starts many jobs of one image does: each create's rule sees the
// others' pins of the same rootfs come and go while it judges it; three
// rounds each, so that deletes overlap creates all along.
func TestParallelCyclesOneBundle(t *testing.T) {
	needRoot(t, "runc")
	b := bundle.New(t, []string{"true"})
	bundles := make([]string, 32)
	for i := range bundles {
		bundles[i] = b
	}
	parallelCycles(t, bundles, 3)
}

// parallelCycles runs a create, start and delete --force of a container
// of each bundle at once, rounds times in a row each.
func parallelCycles(t *testing.T, bundles []string, rounds int) {
	n := len(bundles)
	root := stateRoot(t)
	g := []string{"--root", root}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for round := range rounds {
				id := fmt.Sprintf("par-%02d-%d", i, round)
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
		for round := range rounds {
			assertGone(t, root, "runc", fmt.Sprintf("par-%02d-%d", i, round))
		}
	}
}
