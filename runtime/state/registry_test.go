package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/specs"
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
	// What a backend would read as a flag is no id.
	for _, id := range []string{"--", "-", "--all", "-x"} {
		if err := CheckID(id); err == nil {
			t.Errorf("%q is a valid container id", id)
		}
	}
	ids, err := reg.IDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 5 {
		t.Errorf("ids %v, want the five added", ids)
	}
}

// TestUpdateOnlyOwnRecord: a create whose record was deleted and whose id
// another create took meanwhile writes neither its record nor its
// findings over the other's, and learns so; a create whose record was
// only deleted writes nothing either.
func TestUpdateOnlyOwnRecord(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stale := &Record{ID: "c", Backend: "runc", Created: time.Now().UTC()}
	if err := reg.Add(stale); err != nil {
		t.Fatal(err)
	}
	if err := reg.Remove("c"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Update(stale); !errors.Is(err, ErrReplaced) {
		t.Errorf("Update of a deleted record: %v, want ErrReplaced", err)
	}
	if _, err := reg.Get("c"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Update of a deleted record, Get: %v; want no record", err)
	}
	other := &Record{ID: "c", Backend: "runc", Created: stale.Created.Add(time.Nanosecond)}
	if err := reg.Add(other); err != nil {
		t.Fatal(err)
	}
	stale.InitPid, stale.InitStart = 4242, 1
	if err := reg.Update(stale); !errors.Is(err, ErrReplaced) {
		t.Errorf("Update over another create's record: %v, want ErrReplaced", err)
	}
	if err := reg.WriteFindings(stale, &Findings{}); !errors.Is(err, ErrReplaced) {
		t.Errorf("WriteFindings over another create's record: %v, want ErrReplaced", err)
	}
	if _, err := os.Stat(filepath.Join(reg.Dir("c"), findingsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("findings written beside another create's record: %v", err)
	}
	if got, err := reg.Get("c"); err != nil || got.InitPid != 0 || !got.Created.Equal(other.Created) {
		t.Errorf("the other create's record after the stale Update: %+v, %v", got, err)
	}
	other.InitPid = 7
	if err := reg.Update(other); err != nil {
		t.Errorf("Update of its own record: %v", err)
	}
	if err := reg.Owned(stale); !errors.Is(err, ErrReplaced) {
		t.Errorf("Owned of the stale record: %v, want ErrReplaced", err)
	}
}

// TestRemoveOwnedLeavesNewer: a delete that read a record removes it and
// its state only while it is that container's: a record another create
// made under the id since stays, and Current says it is not this one.
func TestRemoveOwnedLeavesNewer(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old := &Record{ID: "c", Created: time.Now().UTC()}
	if err := reg.Add(old); err != nil {
		t.Fatal(err)
	}
	snap, err := reg.Snapshot("c")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := reg.Remove("c"); err != nil {
		t.Fatal(err)
	}
	newer := &Record{ID: "c", Created: old.Created.Add(time.Second)}
	if err := reg.Add(newer); err != nil {
		t.Fatal(err)
	}
	if _, err := snap.Current(); !errors.Is(err, ErrReplaced) {
		t.Errorf("Current of a record replaced by another create's: %v, want ErrReplaced", err)
	}
	if err := reg.RemoveOwned(old); !errors.Is(err, ErrReplaced) {
		t.Errorf("RemoveOwned of the old record: %v, want ErrReplaced", err)
	}
	if got, err := reg.Get("c"); err != nil || !got.Created.Equal(newer.Created) {
		t.Fatalf("the newer record after RemoveOwned of the old: %+v, %v", got, err)
	}
	if err := reg.RemoveOwned(newer); err != nil {
		t.Errorf("RemoveOwned of its own record: %v", err)
	}
	if _, err := os.Stat(reg.Dir("c")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state of c after RemoveOwned of its own record: %v", err)
	}
}

// TestRegistryKnownAsEngineState: the rules know a registry by its lock
// file wherever its --root lies (specs' engine layouts); renaming the lock
// must not make other containers' records bindable.
func TestRegistryKnownAsEngineState(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := reg.lock()
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if home := specs.EngineHomeAt(reg.dir); home != "/run/bulkhead" {
		t.Errorf("a registry at %s is judged as %q, want /run/bulkhead", reg.dir, home)
	}
}
