package workspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// A keep in flight holds a lease: a .tmp- directory of changes_dir with
// the entry being written in entry/ and a lease file beside it, locked
// until the entry is in place, that says how much of changes_quota the
// keep reserved. The store's lock is held only to reserve and to put the
// entry in place: a copy of a gigabyte made under it held every other
// container's delete that keeps changes for as long as the copy took.
// What a keep may take is counted against what is kept and what the keeps
// in flight reserved, so keeps at once cannot pass the quota together.
type keepLease struct {
	dir   string   // the .tmp- directory
	f     *os.File // the lease file, locked for the keep's lifetime
	bytes int64    // what the entry may take on disk
}

const leaseName = "lease"

// entry is the directory the kept entry is written in.
func (l *keepLease) entry() string { return filepath.Join(l.dir, "entry") }

// takeLease reserves what the next keep may take: changes_max_bytes, or
// what changes_quota leaves of what is kept. While keeps in flight
// reserve some of that, it waits for one of them to end rather than take
// less, so the outcome is the one keeps made one at a time would have.
func takeLease(cfg *Settings, lim changeLimits) (*keepLease, error) {
	for {
		unlock, err := lockChanges(cfg)
		if err != nil {
			return nil, err
		}
		l, other, err := reserveLocked(cfg, lim)
		unlock()
		if other == nil {
			return l, err
		}
		// The lease is released when its keeper's descriptor closes,
		// whether it finished or died.
		_ = unix.Flock(int(other.Fd()), unix.LOCK_SH)
		other.Close()
	}
}

// reserveLocked takes a lease under the store's lock, or names the lease
// of a keep in flight to wait for.
func reserveLocked(cfg *Settings, lim changeLimits) (*keepLease, *os.File, error) {
	if _, err := pruneLocked(cfg, -1); err != nil {
		logrus.Warnf("bulkhead: prune changes: %v", err)
	}
	kept, _, err := scanStore(cfg)
	if err != nil {
		return nil, nil, err
	}
	var used int64
	for _, k := range kept {
		used += k.Bytes
	}
	if used >= lim.Quota {
		return nil, nil, fmt.Errorf("changes_quota: kept changes take %d of %d bytes; prune some", used, lim.Quota)
	}
	want := min(lim.Bytes, lim.Quota-used)
	reserved, leases, err := inFlight(cfg, lim.Bytes)
	if err != nil {
		return nil, nil, err
	}
	if len(leases) > 0 && lim.Quota-used-reserved < want {
		other, err := os.OpenFile(filepath.Join(leases[0], leaseName), os.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return nil, nil, err
		}
		return nil, other, nil
	}
	tmp, err := os.MkdirTemp(changesDir(cfg), tmpPrefix)
	if err != nil {
		return nil, nil, err
	}
	l := &keepLease{dir: tmp, bytes: want}
	if err := l.hold(); err != nil {
		if l.f != nil {
			l.f.Close()
		}
		_ = os.RemoveAll(tmp)
		return nil, nil, err
	}
	return l, nil, nil
}

func (l *keepLease) hold() error {
	f, err := os.OpenFile(filepath.Join(l.dir, leaseName), os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	l.f = f
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return err
	}
	if _, err := f.WriteString(strconv.FormatInt(l.bytes, 10)); err != nil {
		return err
	}
	return os.Mkdir(l.entry(), 0o700)
}

// release removes what is left of the keep's directory (all of it when
// the keep failed; the lease alone once the entry is in place) and ends
// the lease.
func (l *keepLease) release(cfg *Settings) {
	if unlock, err := lockChanges(cfg); err == nil {
		defer unlock()
	}
	if err := os.RemoveAll(l.dir); err != nil {
		logrus.Warnf("bulkhead: changes: %v", err)
	}
	l.f.Close()
}

// inFlight sums what the keeps in flight reserved and names their
// directories.
func inFlight(cfg *Settings, unreadable int64) (reserved int64, dirs []string, err error) {
	top, err := os.ReadDir(changesDir(cfg))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	for _, e := range top {
		p := filepath.Join(changesDir(cfg), e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		if n, held := heldLease(p, unreadable); held {
			reserved += n
			dirs = append(dirs, p)
		}
	}
	return reserved, dirs, nil
}

// heldLease says whether a keep holds the .tmp- directory dir, and what
// it reserved (unreadable when its lease does not say); a directory no
// keep holds is a keep that died.
func heldLease(dir string, unreadable int64) (int64, bool) {
	f, err := os.OpenFile(filepath.Join(dir, leaseName), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		return 0, false
	}
	b, err := io.ReadAll(io.LimitReader(f, 32))
	if err != nil {
		return unreadable, true
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n < 0 {
		return unreadable, true
	}
	return n, true
}
