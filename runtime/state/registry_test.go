package state

import (
	"testing"
)

// TestRegistryAnyValidID: every id CheckID accepts can be recorded, the
// names of the registry's own files included.
func TestRegistryAnyValidID(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A first Add makes the lock file.
	for _, id := range []string{"first", "lock", "LOCK", ".lock", "lock.d"} {
		if err := CheckID(id); err != nil {
			t.Fatalf("CheckID(%q): %v", id, err)
		}
		if err := reg.Add(&Record{ID: id}); err != nil {
			t.Errorf("Add(%q): %v", id, err)
		}
	}
	if err := CheckID(LockName); err == nil {
		t.Errorf("the lock file's name %q is a valid container id", LockName)
	}
	ids, err := reg.IDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 5 {
		t.Errorf("ids %v, want the five added", ids)
	}
}
