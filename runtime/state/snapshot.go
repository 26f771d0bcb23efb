package state

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Snapshot is a record as read, with its file kept open. Every write
// replaces the file (write renames a new one over it), so while the path
// still names the held file the record is unchanged, and the open file
// keeps its inode from being reused by a later one. A verb that reads the
// record early (to find the backend) and needs it again later (after the
// backend's delete) decodes it once unless it changed in between.
type Snapshot struct {
	Record *Record
	reg    *Registry
	f      *os.File
	fi     os.FileInfo
}

// Snapshot reads the record of id and holds its file; the error wraps
// os.ErrNotExist when there is no record.
func (r *Registry) Snapshot(id string) (*Snapshot, error) {
	f, err := os.Open(r.recordPath(id))
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	rec, err := decodeRecord(id, data)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Snapshot{Record: rec, reg: r, f: f, fi: fi}, nil
}

// Current is the record as it is now: the snapshot's while its file is
// still the record's, else read again (an error wrapping os.ErrNotExist
// when it is gone). A record another create made since, under the same
// id, is not this container's: ErrReplaced.
func (s *Snapshot) Current() (*Record, error) {
	fi, err := os.Stat(s.reg.recordPath(s.Record.ID))
	if err == nil && os.SameFile(fi, s.fi) {
		return s.Record, nil
	}
	rec, err := s.reg.Get(s.Record.ID)
	if err == nil && !rec.Created.Equal(s.Record.Created) {
		return nil, fmt.Errorf("container %s: %w", s.Record.ID, ErrReplaced)
	}
	return rec, err
}

// Close releases the held file; a nil snapshot is fine.
func (s *Snapshot) Close() {
	if s != nil {
		s.f.Close()
	}
}

func (r *Registry) recordPath(id string) string {
	return filepath.Join(r.Dir(id), recordFile)
}
