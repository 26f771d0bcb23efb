package specs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// snapshotRecord is what a containerd snapshotter records of one of its
// snapshots: its kind and its key (<namespace>/<n>/<the client's key>).
type snapshotRecord struct {
	Kind snapshotKind
	Key  string
}

// snapshotKind is containerd's snapshots.Kind, which its snapshotters'
// storage (core/snapshots/storage) writes as one byte.
type snapshotKind byte

const (
	kindView snapshotKind = iota + 1
	kindActive
	kindCommitted
)

func (k snapshotKind) String() string {
	switch k {
	case kindView:
		return "View"
	case kindActive:
		return "Active"
	case kindCommitted:
		return "Committed"
	}
	return "Unknown"
}

// maxSnapshotDB bounds the snapshotter database a create copies into
// memory: 10,000 snapshots take 4 MiB. A larger one (a client can grow it
// with snapshot labels, and bbolt never shrinks it) is refused before any
// of it is copied.
const maxSnapshotDB = 64 << 20

// readSnapshotRecords reads the records of the snapshotter whose home
// (holding snapshots/ and metadata.db) is root, by snapshot id, with
// its layout as containerd's own code reads it. containerd holds that file
// locked while it runs, so a copy of it is read: a copy taken while
// containerd wrote it may not read as a database (then it is tried
// again), and one that does is the database as some commit left it.
// A database that cannot be opened or is too large is not tried again.
func readSnapshotRecords(root string, want map[string]bool) (map[string]snapshotRecord, error) {
	var err error
	for range 3 {
		var recs map[string]snapshotRecord
		if recs, err = readSnapshotRecordsOnce(filepath.Join(root, "metadata.db"), want); err == nil {
			return recs, nil
		}
		if errors.Is(err, errUncopied) {
			return nil, err
		}
	}
	return nil, err
}

// errUncopied is a database not copied at all: no copy of it is torn.
var errUncopied = errors.New("not read")

func readSnapshotRecordsOnce(db string, want map[string]bool) (recs map[string]snapshotRecord, err error) {
	in, err := os.OpenFile(db, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUncopied, err)
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil {
		return nil, fmt.Errorf("%w: %w", errUncopied, err)
	} else if st.Size() > maxSnapshotDB {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes (%d): compact it (bbolt compact) after removing what grew it", errUncopied, db, maxSnapshotDB, st.Size())
	}
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
	records, err := bolt.Open("/proc/self/fd/"+strconv.Itoa(fd), 0, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", db, err)
	}
	defer records.Close()
	recs = map[string]snapshotRecord{}
	err = records.View(func(tx *bolt.Tx) error {
		return snapshotBuckets(tx, func(key string, b *bolt.Bucket) {
			id, _ := binary.Uvarint(b.Get(bucketKeyID))
			if sid := strconv.FormatUint(id, 10); want == nil || want[sid] {
				rec := snapshotRecord{Key: key}
				if kind := b.Get(bucketKeyKind); len(kind) == 1 {
					rec.Kind = snapshotKind(kind[0])
				}
				recs[sid] = rec
			}
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", db, err)
	}
	return recs, nil
}

// The layout containerd's snapshotter storage (core/snapshots/storage,
// bolt.go) gives its database: bucket v1, in it bucket snapshots, in it
// a bucket per snapshot key holding its id (uvarint) and kind (a byte).
// Read here with bbolt alone: containerd's package brings containerd's
// API types and their protobuf descriptors into bulkhead, whose
// initialisation was a quarter of what every bulkhead process spent
// before main. TestSnapshotRecordsAsContainerdReadsThem holds the two
// readers to one answer.
var (
	bucketKeyStorageVersion = []byte("v1")
	bucketKeySnapshot       = []byte("snapshots")
	bucketKeyID             = []byte("id")
	bucketKeyKind           = []byte("kind")
)

// snapshotBuckets calls fn with the key and bucket of every snapshot.
func snapshotBuckets(tx *bolt.Tx, fn func(key string, b *bolt.Bucket)) error {
	v := tx.Bucket(bucketKeyStorageVersion)
	if v == nil {
		return errors.New("bucket v1 does not exist")
	}
	snaps := v.Bucket(bucketKeySnapshot)
	if snaps == nil {
		return errors.New("snapshots bucket does not exist")
	}
	return snaps.ForEach(func(k, val []byte) error {
		if val == nil { // a nested bucket: a snapshot
			if b := snaps.Bucket(k); b != nil {
				fn(string(k), b)
			}
		}
		return nil
	})
}

// errNoSnapshotRecord is a snapshot directory its snapshotter has no
// record of (removed, or never its).
var errNoSnapshotRecord = errors.New("the snapshotter has no record of it")

// snapshotRecordOf is the record of the snapshot whose directory (fs or
// work, snapshotLayer's) is d, read once per container (see
// loadSnapshotRecords).
func (c *Context) snapshotRecordOf(d string) (snapshotRecord, error) {
	if err := c.loadSnapshotRecords(d); err != nil {
		return snapshotRecord{}, err
	}
	rec, ok := c.snapshotDBs[snapshotHome(d)][snapshotID(d)]
	if !ok {
		return snapshotRecord{}, errNoSnapshotRecord
	}
	return rec, nil
}

// loadSnapshotRecords reads, one database copy per snapshotter, the
// records of the snapshots whose directories are dirs and that this
// container has not read yet: a node's snapshotter holds thousands, and
// a copy and a pass over their keys is most of what reading costs.
func (c *Context) loadSnapshotRecords(dirs ...string) error {
	want := map[string]map[string]bool{}
	for _, d := range dirs {
		home, id := snapshotHome(d), snapshotID(d)
		if _, ok := c.snapshotDBs[home][id]; ok || c.snapshotAbsent[filepath.Join(home, "snapshots", id)] {
			continue
		}
		if want[home] == nil {
			want[home] = map[string]bool{}
		}
		want[home][id] = true
	}
	for home, ids := range want {
		recs, err := readSnapshotRecords(home, ids)
		if err != nil {
			return err
		}
		if c.snapshotDBs == nil {
			c.snapshotDBs, c.snapshotAbsent = map[string]map[string]snapshotRecord{}, map[string]bool{}
		}
		if c.snapshotDBs[home] == nil {
			c.snapshotDBs[home] = map[string]snapshotRecord{}
		}
		for id := range ids {
			if rec, ok := recs[id]; ok {
				c.snapshotDBs[home][id] = rec
			} else {
				c.snapshotAbsent[filepath.Join(home, "snapshots", id)] = true
			}
		}
	}
	return nil
}

// snapshotHome is the snapshotter's home (snapshots/ and metadata.db) of
// a snapshot's directory <home>/snapshots/<id>/{fs,work}; snapshotID the
// id.
func snapshotHome(d string) string { return filepath.Dir(filepath.Dir(filepath.Dir(d))) }
func snapshotID(d string) string   { return filepath.Base(filepath.Dir(d)) }
