package workspace

import (
	"os"
	"slices"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/runtime/state"
)

// keepInBackground runs one container's keep and reports its end.
func keepInBackground(t *testing.T, cfg *Settings, id string) <-chan error {
	t.Helper()
	h := newHostileWorkspace(t)
	h.file(id+".txt", []byte("written by "+id+"\n"))
	done := make(chan error, 1)
	go func() {
		_, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: id}, []Workspace{h.ws}, time.Hour)
		done <- err
	}()
	return done
}

// leaseInFlight takes a lease as a keep in flight holds it.
func leaseInFlight(t *testing.T, cfg *Settings) (*keepLease, changeLimits) {
	t.Helper()
	lim, err := LimitsOf(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := takeLease(cfg, lim)
	if err != nil {
		t.Fatal(err)
	}
	return l, lim
}

// A keep copying a gigabyte held the store's lock for the whole copy, and
// every other container's delete that keeps changes waited for it. One in
// flight now holds a lease, not the lock: another keep ends beside it, and
// prune leaves its directory alone.
func TestKeepInFlightHoldsNoOtherKeep(t *testing.T) {
	cfg := testConfig(t)
	inFlight, _ := leaseInFlight(t, cfg)
	select {
	case err := <-keepInBackground(t, cfg, "other"):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		inFlight.release(cfg)
		t.Fatal("a keep in flight held another container's keep for a minute")
	}
	gone, err := Prune(cfg, -1)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(gone, inFlight.dir) {
		t.Fatalf("prune removed the directory of a keep in flight: %q", gone)
	}
	if _, err := os.Stat(inFlight.entry()); err != nil {
		t.Fatalf("the keep in flight lost its entry: %v", err)
	}
	inFlight.release(cfg)
	if _, err := os.Stat(inFlight.dir); !os.IsNotExist(err) {
		t.Fatalf("a released lease left its directory: %v", err)
	}
	kept, orphans, err := scanStore(cfg)
	if err != nil || len(kept) != 1 || kept[0].ID != "other" || len(orphans) != 0 {
		t.Fatalf("store holds %d entries and %q left over (%v), want the other keep alone", len(kept), orphans, err)
	}
}

// Keeps at once share changes_quota: while one in flight reserves what
// the next would take, the next waits for it rather than pass the quota
// with it or take less than it would have alone.
func TestKeepsInFlightShareTheQuota(t *testing.T) {
	cfg := testConfig(t)
	cfg.ChangesMaxBytes, cfg.ChangesQuota = "2m", "3m"
	first, _ := leaseInFlight(t, cfg)
	if first.bytes != 2<<20 {
		t.Fatalf("the first keep reserved %d bytes, want changes_max_bytes (%d)", first.bytes, 2<<20)
	}
	if n, held := heldLease(first.dir, 0); !held || n != first.bytes {
		t.Fatalf("its lease reads %d, held %v; want %d, held", n, held, first.bytes)
	}
	second := keepInBackground(t, cfg, "second")
	select {
	case err := <-second:
		first.release(cfg)
		t.Fatalf("a keep ended while another in flight held two of the quota's three MiB (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	first.release(cfg)
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a keep still waits a minute after the lease it waited for ended")
	}
	kept, _, err := scanStore(cfg)
	if err != nil || len(kept) != 1 || kept[0].ID != "second" {
		t.Fatalf("store holds %d entries (%v), want the second keep", len(kept), err)
	}
}

// A keep that died (its lease no longer held) is a leftover: prune
// removes it, and it reserves nothing.
func TestLeaseOfADeadKeepIsPruned(t *testing.T) {
	cfg := testConfig(t)
	dead, lim := leaseInFlight(t, cfg)
	dead.f.Close() // as the kernel closes it when the keeper dies
	if reserved, dirs, err := inFlight(cfg, lim.Bytes); err != nil || reserved != 0 || len(dirs) != 0 {
		t.Fatalf("a dead keep still reserves %d bytes in %q (%v)", reserved, dirs, err)
	}
	gone, err := Prune(cfg, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(gone, dead.dir) {
		t.Fatalf("prune left the dead keep's directory: removed %q", gone)
	}
}
