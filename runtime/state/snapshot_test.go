package state

import (
	"errors"
	"os"
	"testing"
)

// TestSnapshotCurrent: a snapshot's record is the current one until the
// record is written or removed, and then the written one or none.
func TestSnapshotCurrent(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Snapshot("none"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Snapshot of no record: %v, want os.ErrNotExist", err)
	}
	if err := reg.Add(&Record{ID: "c", Backend: "runc"}); err != nil {
		t.Fatal(err)
	}
	snap, err := reg.Snapshot("c")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if rec, err := snap.Current(); err != nil || rec != snap.Record {
		t.Fatalf("unchanged record: %v, %v; want the snapshot's", rec, err)
	}
	if err := reg.Update(&Record{ID: "c", Backend: "runc", BrokerPid: 42}); err != nil {
		t.Fatal(err)
	}
	rec, err := snap.Current()
	if err != nil || rec.BrokerPid != 42 {
		t.Fatalf("after Update: %+v, %v; want the written record", rec, err)
	}
	if err := reg.Remove("c"); err != nil {
		t.Fatal(err)
	}
	if rec, err := snap.Current(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Remove: %+v, %v; want os.ErrNotExist", rec, err)
	}
}
