package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// copyBuf is the one buffer size every read of a sandbox file uses: memory
// stays the same whatever the file's size.
const copyBuf = 128 << 10

// openRegular opens rel for reading only if it is a regular file, checked
// on the descriptor: it is first opened O_PATH (which never runs a
// device's open nor waits on a fifo), its type read with fstat, and only
// then re-opened for reading through /proc/self/fd, which reaches the very
// same inode without resolving the path again. want, when set, is what the
// walk saw: a different inode means the sandbox swapped the file meanwhile.
func (l *layer) openRegular(rel string, want *unix.Stat_t) (*os.File, *unix.Stat_t, error) {
	p, err := l.open(rel, unix.O_PATH)
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(p.Fd()), &st); err != nil {
		return nil, nil, err
	}
	if err := sameRegular(rel, &st, want); err != nil {
		return nil, nil, err
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(p.Fd())), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "reopen", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := sameRegular(rel, &st2, &st); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, &st2, nil
}

func sameRegular(rel string, st, want *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s: not a regular file (%s)", rel, typeOf(st.Mode))
	}
	if want != nil && (st.Dev != want.Dev || st.Ino != want.Ino) {
		return fmt.Errorf("%s: replaced while bulkhead read it", rel)
	}
	// The budget was charged with the size judged; a live job can make the
	// file a sparse 4 EiB in between, which would be read (as zeros) whole.
	if want != nil && st.Size != want.Size {
		return fmt.Errorf("%s: changed size while bulkhead read it (%d bytes, then %d); not read", rel, want.Size, st.Size)
	}
	return nil
}

// segments calls fn for each stretch of f's first size bytes, in order,
// telling data from holes (SEEK_DATA/SEEK_HOLE). A filesystem without
// hole support yields one data stretch.
func segments(f *os.File, size int64, fn func(off, n int64, data bool) error) error {
	fd := int(f.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return fn(off, size-off, false) // a hole to the end
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
			return fn(off, size-off, true)
		}
		if err != nil {
			return err
		}
		if data > size {
			data = size
		}
		if data > off {
			if err := fn(off, data-off, false); err != nil {
				return err
			}
		}
		if data >= size {
			return nil
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if hole > size {
			hole = size
		}
		if err := fn(data, hole-data, true); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

// zeros is what a hole reads as.
var zeros = make([]byte, copyBuf)

// streamContent feeds f's first size bytes to w with one fixed buffer,
// holes as zeros, without reading the holes from the file.
func streamContent(w io.Writer, f *os.File, size int64) error {
	buf := make([]byte, max(min(size, copyBuf), 1))
	return segments(f, size, func(off, n int64, data bool) error {
		for n > 0 {
			k := min(n, int64(len(buf)))
			if !data {
				if _, err := w.Write(zeros[:k]); err != nil {
					return err
				}
			} else {
				got, err := f.ReadAt(buf[:k], off)
				if got > 0 {
					if _, werr := w.Write(buf[:got]); werr != nil {
						return werr
					}
				}
				if err == io.EOF {
					return nil // shrank meanwhile: what was there is what counts
				}
				if err != nil {
					return err
				}
				k = int64(got)
			}
			off, n = off+k, n-k
		}
		return nil
	})
}

// contentSum hashes a file as streamContent reads it and tells whether
// git would call it binary (a NUL in the first 8000 bytes).
type contentSum struct {
	h    hashWriter
	head []byte
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

func (c *contentSum) Write(p []byte) (int, error) {
	if len(c.head) < 8000 {
		k := min(len(p), 8000-len(c.head))
		c.head = append(c.head, p[:k]...)
	}
	return c.h.Write(p)
}

// hashRegular hashes the regular file rel of l (as the walk saw it in
// want), streamed with fixed memory.
func (l *layer) hashRegular(rel string, want *unix.Stat_t) (sum string, binary bool, err error) {
	f, st, err := l.openRegular(rel, want)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	c := &contentSum{h: sha256.New()}
	if err := streamContent(c, f, st.Size); err != nil {
		return "", false, err
	}
	return hex.EncodeToString(c.h.Sum(nil)), isBinary(c.head), nil
}

// readSmall reads a regular file of at most limit bytes whole, for the
// text patch; larger files are refused before any byte is read.
// want is the inode the caller judged (nil: none to compare): a file
// swapped in since is not read.
func (l *layer) readSmall(rel string, want *unix.Stat_t, limit int64) ([]byte, error) {
	f, st, err := l.openRegular(rel, want)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size > limit {
		return nil, fmt.Errorf("%d bytes, more than the %d a text patch shows", st.Size, limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}
