package specs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/core/snapshots/storage"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// snapshotRecord is what a containerd snapshotter records of one of its
// snapshots: its kind and its key (<namespace>/<n>/<the client's key>).
type snapshotRecord struct {
	Kind snapshots.Kind
	Key  string
}

// maxSnapshotDB bounds the snapshotter database read: tens of thousands
// of snapshots take a few megabytes.
const maxSnapshotDB = 256 << 20

// readSnapshotRecords reads the records of the snapshotter whose home
// (holding snapshots/ and metadata.db) is root, by snapshot id, with
// containerd's own code for its database. containerd holds that file
// locked while it runs, so a copy of it is read: a copy taken while
// containerd wrote it may not read as a database (then it is tried
// again), and one that does is the database as some commit left it.
func readSnapshotRecords(root string) (map[string]snapshotRecord, error) {
	var err error
	for range 3 {
		var recs map[string]snapshotRecord
		if recs, err = readSnapshotRecordsOnce(filepath.Join(root, "metadata.db")); err == nil {
			return recs, nil
		}
	}
	return nil, err
}

func readSnapshotRecordsOnce(db string) (recs map[string]snapshotRecord, err error) {
	in, err := os.OpenFile(db, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	fd, err := unix.MemfdCreate("bulkhead-snapshots", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("copy of %s: %w", db, err)
	}
	copied := os.NewFile(uintptr(fd), "bulkhead-snapshots")
	defer copied.Close()
	n, err := io.Copy(copied, io.LimitReader(in, maxSnapshotDB+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("copy of %s: %w", db, err)
	case n > maxSnapshotDB:
		return nil, fmt.Errorf("%s is larger than %d bytes", db, maxSnapshotDB)
	}
	// A copy torn by a write can make bbolt panic on a page it does not
	// expect: that is a copy to take again, not a crash.
	defer func() {
		if r := recover(); r != nil {
			recs, err = nil, fmt.Errorf("%s: %v", db, r)
		}
	}()
	ms, err := storage.NewMetaStore("/proc/self/fd/"+strconv.Itoa(fd), func(o *bolt.Options) error {
		o.ReadOnly = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	defer ms.Close()
	recs = map[string]snapshotRecord{}
	err = ms.WithTransaction(context.Background(), false, func(ctx context.Context) error {
		keys, err := storage.IDMap(ctx)
		if err != nil {
			return err
		}
		for id, key := range keys {
			_, info, _, err := storage.GetInfo(ctx, key)
			if err != nil {
				return err
			}
			recs[id] = snapshotRecord{Kind: info.Kind, Key: key}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", db, err)
	}
	return recs, nil
}

// errNoSnapshotRecord is a snapshot directory its snapshotter has no
// record of (removed, or never its).
var errNoSnapshotRecord = errors.New("the snapshotter has no record of it")

// snapshotRecordOf is the record of the snapshot whose directory (fs or
// work, snapshotLayer's) is d, read once per container.
func (c *Context) snapshotRecordOf(d string) (snapshotRecord, error) {
	id := filepath.Base(filepath.Dir(d))
	root := filepath.Dir(filepath.Dir(filepath.Dir(d)))
	recs, ok := c.snapshotDBs[root]
	if !ok {
		var err error
		if recs, err = readSnapshotRecords(root); err != nil {
			return snapshotRecord{}, err
		}
		if c.snapshotDBs == nil {
			c.snapshotDBs = map[string]map[string]snapshotRecord{}
		}
		c.snapshotDBs[root] = recs
	}
	rec, ok := recs[id]
	if !ok {
		return snapshotRecord{}, errNoSnapshotRecord
	}
	return rec, nil
}
