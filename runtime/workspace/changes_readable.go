package workspace

import (
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// What leaves the sandbox through an export is only what the sandbox user
// could read: bulkhead reads both layers as root.

// readableBy tells whether a process of uid and gid, with no capability
// and no other group, could read a file of st's owner and mode. A link's
// target is no secret of its mode.
func readableBy(st *unix.Stat_t, uid, gid uint32) bool {
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return true
	}
	switch {
	case st.Uid == uid:
		return st.Mode&0o400 != 0
	case st.Gid == gid:
		return st.Mode&0o040 != 0
	}
	return st.Mode&0o004 != 0
}

// upperReadable tells whether the sandbox user could read the upper-layer
// file st. The job writes the upper layer, but not all of it is the job's:
// overlayfs copies a lower file up with the mounter's credentials, so a
// root-owned 0600 token the job renamed (its directory lets it) lies
// there with root's owner and mode, and its content would leave in the
// export as if the job had written it. The upper layer carries no id map:
// its owners are the ones the sandbox saw. With the user unknown, only
// what anyone could read passes.
func upperReadable(st *unix.Stat_t, reader *idShift) bool {
	if reader == nil {
		return readableBy(st, ^uint32(0), ^uint32(0))
	}
	return readableBy(st, reader.UIDTo, reader.GIDTo)
}

// upperFileReadable tells whether the sandbox user could read the regular
// upper-layer file rel, judged as st: by its owner and mode bits, and
// only when no access ACL may say otherwise. Every walk of the upper
// layer asks it before a file's content leaves.
func (l *layer) upperFileReadable(rel string, st *unix.Stat_t, reader *idShift) bool {
	return upperReadable(st, reader) && !l.hasAccessACL(rel, st)
}

// unreadableReason is why a file the sandbox user could not read never
// leaves the upper layer.
const unreadableReason = "not readable by the sandbox user (a file it could not read, moved or renamed): never exported"

// hasAccessACL tells whether the regular file rel, the inode judged as
// st, carries a POSIX access ACL. Its mode bits then do not say who may
// read it: a named entry can deny the sandbox user a file the bits let
// anyone read. Such a file is taken as one the sandbox could not read, and
// so is one whose ACL cannot be told or whose name leads to another inode
// by now (the read that follows must find st's inode too).
func (l *layer) hasAccessACL(rel string, st *unix.Stat_t) bool {
	p, err := l.open(rel, unix.O_PATH)
	if err != nil {
		return true
	}
	defer p.Close()
	var now unix.Stat_t
	if err := unix.Fstat(int(p.Fd()), &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return true
	}
	_, err = unix.Getxattr("/proc/self/fd/"+strconv.Itoa(int(p.Fd())), "system.posix_acl_access", nil)
	return !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EOPNOTSUPP)
}

// lowerReadable tells whether the sandbox user (reader; nil: unknown, and
// then no) could read the lower file rel, by its owner as the id map
// showed it, its mode bits and its ACL, and returns the file as judged.
func lowerReadable(low *layer, rel string, reader *idShift) (*unix.Stat_t, bool) {
	if reader == nil {
		return nil, false
	}
	st, err := low.lstat(rel)
	if err != nil {
		return nil, false
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && low.hasAccessACL(rel, st) {
		return nil, false
	}
	seen := *st
	seen.Uid, seen.Gid = shifted(st.Uid, reader.UIDFrom, reader.UIDTo), shifted(st.Gid, reader.GIDFrom, reader.GIDTo)
	return st, readableBy(&seen, reader.UIDTo, reader.GIDTo)
}
