package backend

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A descriptor the caller hands bulkhead (its stdio, the ones
// --preserve-fds passes on) reaches the container's process open, past
// every mount rule of the policy: a directory is a bind of the host tree
// behind it ("/proc/self/fd/3/etc/passwd"), which config.json could never
// ask for. JudgeHandedFile is default-deny over what such a descriptor
// is: what it does not know is refused.

// zfsSuperMagic is ZFS's f_type; golang.org/x/sys has no constant for a
// filesystem outside the kernel tree.
const zfsSuperMagic = 0x2fc12fc1

// dataFilesystems hold the regular files a container may be handed: their
// files are data, whoever reads them. Pseudo filesystems are left out on
// purpose, since a regular file there is a handle on host state rather
// than data (/proc/<pid>/mem, a cgroup.procs that moves processes, a
// sysfs or debugfs knob, a pidfd on pidfs that pidfd_send_signal turns
// into a signal to a host process, a memfd_secret).
var dataFilesystems = map[int64]string{
	unix.EXT4_SUPER_MAGIC:      "ext2/3/4", // ext2 and ext3 share the magic
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.TMPFS_MAGIC:           "tmpfs",     // also every memfd
	unix.HUGETLBFS_MAGIC:       "hugetlbfs", // a memfd with MFD_HUGETLB
	unix.RAMFS_MAGIC:           "ramfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlayfs",
	unix.NFS_SUPER_MAGIC:       "nfs",
	unix.FUSE_SUPER_MAGIC:      "fuse",
	zfsSuperMagic:              "zfs",
	unix.F2FS_SUPER_MAGIC:      "f2fs",
	unix.MSDOS_SUPER_MAGIC:     "vfat",
	unix.SQUASHFS_MAGIC:        "squashfs",
	unix.V9FS_MAGIC:            "9p",
	unix.CEPH_SUPER_MAGIC:      "ceph",
	unix.CIFS_SUPER_MAGIC:      "cifs",
	unix.SMB2_SUPER_MAGIC:      "smb2",
}

// pseudoFilesystemName names the pseudo filesystems a refusal most
// often meets, for the caller to recognise.
func pseudoFilesystemName(magic int64) string {
	name, ok := map[int64]string{unix.PROC_SUPER_MAGIC: "proc", unix.SYSFS_MAGIC: "sysfs", unix.CGROUP_SUPER_MAGIC: "cgroup",
		unix.CGROUP2_SUPER_MAGIC: "cgroup2", unix.DEBUGFS_MAGIC: "debugfs", unix.TRACEFS_MAGIC: "tracefs",
		unix.SECURITYFS_MAGIC: "securityfs", unix.BPF_FS_MAGIC: "bpffs"}[magic]
	if !ok {
		return fmt.Sprintf("a pseudo filesystem (type %#x)", magic)
	}
	return name
}

// handedCharDevice says whether a character device may be handed, and
// names it. The memory devices are data sources and sinks without host
// state. A pty slave or a serial tty is a terminal the caller's shell
// already writes to; it is never the container's controlling terminal,
// since runc's init calls setsid() before it execs the workload
// (libcontainer/nsenter/nsexec.c, stage-2, for init and for exec alike),
// so TIOCSTI on it is EPERM without CAP_SYS_ADMIN in the host's user
// namespace. A pty master (/dev/ptmx) is refused: writing to it types
// into the caller's shell. So are virtual consoles (TIOCLINUX pastes
// the selection into another console), /dev/tty and /dev/console, and
// every device not named here (/dev/mem, kmsg, fuse, kvm...).
func handedCharDevice(major, minor uint32) (string, bool) {
	switch {
	case major == 1:
		name, ok := map[uint32]string{3: "/dev/null", 5: "/dev/zero", 7: "/dev/full", 8: "/dev/random", 9: "/dev/urandom"}[minor]
		return name, ok
	case major >= 136 && major <= 143:
		return "a pty slave", true
	case major == 4 && minor >= 64:
		return "a serial tty", true
	case major == 5 && minor == 2:
		return "a pty master", false
	case major == 4:
		return "a virtual console", false
	}
	return "", false
}

// streamNames are the stdio streams by descriptor.
var streamNames = [3]string{"stdin", "stdout", "stderr"}

// JudgeHandedFile refuses a descriptor the caller hands the container
// unless the policy knows it for harmless: stdio says fd is one of the
// container's stdio streams rather than a --preserve-fds one. The error
// names the stream or flag, the descriptor, what it is and what to hand
// instead.
func JudgeHandedFile(fd int, stdio bool) error {
	what, err := handedFileRefusal(fd, stdio)
	if err == nil {
		return nil
	}
	name := "--preserve-fds: descriptor " + strconv.Itoa(fd)
	if stdio && fd >= 0 && fd < len(streamNames) {
		name = fmt.Sprintf("%s (descriptor %d)", streamNames[fd], fd)
	}
	if target, lerr := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); lerr == nil && what != "" {
		what += " (" + target + ")"
	}
	instead := "a pipe or a file"
	var h handInstead
	if errors.As(err, &h) {
		instead = h.instead
	}
	return fmt.Errorf("%s is %s: %w; hand the container %s instead", name, what, err, instead)
}

// handInstead is a refusal that knows what to hand in its place.
type handInstead struct{ why, instead string }

func (h handInstead) Error() string { return h.why }

// handedFileRefusal returns what fd is and, when it is refused, why.
func handedFileRefusal(fd int, stdio bool) (string, error) {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return "not open", err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "unreadable", fmt.Errorf("fstat: %w", err)
	}
	if flags&unix.O_PATH != 0 {
		return "an O_PATH descriptor", fmt.Errorf("it names a host path the container could open through /proc/self/fd")
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "", nil
	case unix.S_IFREG:
		var fs unix.Statfs_t
		if err := unix.Fstatfs(fd, &fs); err != nil {
			return "a file", fmt.Errorf("fstatfs: %w", err)
		}
		if _, ok := dataFilesystems[int64(fs.Type)]; ok {
			// Stdio is judged so in JudgeStdioOwner, which knows when the
			// backend puts a terminal of its own in its place.
			if why := jobMayWrite(fd, flags, &st); why != "" && !stdio {
				return "a file the job could write", mayWriteRefusal(why)
			}
			return "", nil
		}
		if fs.Type == unix.ANON_INODE_FS_MAGIC {
			return "an anonymous kernel object", fmt.Errorf("it is a handle on host kernel state, not data")
		}
		return "a file on " + pseudoFilesystemName(fs.Type),
			fmt.Errorf("a file on a pseudo filesystem is a handle on host state, not data; only files on data filesystems (ext4, xfs, btrfs, tmpfs, overlayfs...) may be handed")
	case unix.S_IFCHR:
		major, minor := unix.Major(st.Rdev), unix.Minor(st.Rdev)
		name, ok := handedCharDevice(major, minor)
		if ok {
			return "", nil
		}
		if name == "" {
			name = fmt.Sprintf("character device %d:%d", major, minor)
		}
		if name == "a pty master" {
			return name, fmt.Errorf("writing to it types into the caller's terminal")
		}
		return name, fmt.Errorf("only /dev/null, zero, full, random, urandom, a pty slave or a serial tty may be handed")
	case unix.S_IFSOCK:
		return judgeHandedSocket(fd, stdio)
	case unix.S_IFDIR:
		return "a directory", fmt.Errorf("it hands the container the host tree behind it, a bind the policy refuses")
	case unix.S_IFBLK:
		return "a block device", fmt.Errorf("it hands the container a host disk")
	case 0:
		return "an anonymous kernel object", fmt.Errorf("it is a handle on host kernel state, not data")
	}
	return fmt.Sprintf("a file of type %#o", st.Mode&unix.S_IFMT), fmt.Errorf("the policy does not know it")
}

// mayWriteRefusal is the refusal of a file the job could write.
func mayWriteRefusal(why string) handInstead {
	return handInstead{why + ": what the job writes there it could run, past the noexec /tmp and the rule on memfd_create",
		"a pipe, or a file it can only read: root's, opened read-only, written by no one else, or a memfd sealed with F_SEAL_WRITE"}
}

// jobMayWrite says why the job could write the regular file fd, or "".
// A file the job writes is its own code wherever it is reached: the
// dynamic loader maps it executable whatever its mode bits
// (ld.so /proc/self/fd/3), and a noexec mount stops only the path the
// descriptor came by, not a hard link or a bind of the same inode
// elsewhere in the container. So a handed file must be one the job
// cannot write at all: open read-only, root's (the job never runs as
// root, and may be any other file's owner, who can chmod it), writable
// by no group or other (it can open the file again through
// /proc/self/fd; an ACL's entries for other users and groups are bounded
// by its mask, which the group bits show), or sealed against writes (a
// memfd with F_SEAL_WRITE, written by no one).
func jobMayWrite(fd, flags int, st *unix.Stat_t) string {
	if seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0); err == nil && seals&unix.F_SEAL_WRITE != 0 {
		return ""
	}
	switch {
	case flags&unix.O_ACCMODE != unix.O_RDONLY:
		return "it is open for writing"
	case st.Uid != 0:
		return fmt.Sprintf("it is uid %d's, and the job may run as its owner, who can make it writable", st.Uid)
	case st.Mode&0o022 != 0:
		return fmt.Sprintf("its mode %04o lets others than root write it", st.Mode&0o7777)
	}
	return ""
}

// judgeHandedSocket lets only a listening unix socket through, and only
// as a preserved descriptor: socket activation, what --preserve-fds
// exists for. A socket keeps the network namespace it was made in, so
// any other one reaches past the container's empty network: an
// unconnected or raw one is the host's network (connect to a host-only
// service or an abstract unix socket, read and forge IP traffic), a
// connected one the service at its other end (a docker.sock connection
// is the host's engine), and a listening IP one the host's network too,
// since the job can take it off its address (connect with AF_UNSPEC) and
// bind it again to any address and port of the host's. That holds for
// stdio too: engines hand pipes and FIFOs, and a caller with a socket for
// stdio (ssh, inetd) hands the container a pipe instead (`... | bulkhead
// run ... | cat`).
func judgeHandedSocket(fd int, stdio bool) (string, error) {
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return "a socket", fmt.Errorf("SO_DOMAIN: %w", err)
	}
	if domain == unix.AF_INET || domain == unix.AF_INET6 {
		return "an IP socket", handInstead{"it keeps the network namespace it was made in: the job could take a listening one off its address and bind it to any address and port there",
			"a listening unix socket (socket activation) or a pipe"}
	}
	if domain != unix.AF_UNIX {
		return fmt.Sprintf("a socket of family %d", domain), fmt.Errorf("only unix sockets may be handed")
	}
	if stdio {
		return "a socket", fmt.Errorf("a socket keeps the network it was made in: as stdio it reaches past the container's empty network (an unconnected one to the host's, a connected one to the service at its other end)")
	}
	listening, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	if err != nil {
		return "a socket", fmt.Errorf("SO_ACCEPTCONN: %w", err)
	}
	if listening == 1 {
		return "", nil
	}
	return "a socket that is not listening", fmt.Errorf("a connected or unconnected socket reaches past the container's empty network; only a listening unix socket (socket activation) may be preserved")
}

// JudgeHanded judges what a verb whose stdio reaches a container process
// (create, run, restore, exec) hands it: stdio, then the preserveFds
// descriptors from 3 on, each first checked to be the caller's
// (as PreservedFiles does), so bulkhead's own descriptors are refused as such.
func JudgeHanded(preserveFds int) error {
	for fd := 0; fd < len(streamNames); fd++ {
		if err := JudgeHandedFile(fd, true); err != nil {
			return err
		}
	}
	if err := callersDescriptors(preserveFds); err != nil {
		return err
	}
	for fd := 3; fd < 3+preserveFds; fd++ {
		if err := JudgeHandedFile(fd, false); err != nil {
			return err
		}
	}
	return nil
}

// JudgeStdioOwner refuses stdio that runc would give away. Before it
// drops to the container's user, runc's init chowns each of its stdio
// descriptors to that uid unless the descriptor is /dev/null or already
// that uid's (libcontainer/init_linux.go, fixStdioPermissions), so the
// inode behind it stays owned by the sandbox's uid on the host:
// `bulkhead run ID < /etc/passwd` would hand /etc/passwd to every
// process of uid 65534, inside the sandbox and out. A descriptor is
// allowed only where that chown gives nothing away:
//   - it is already uid's (or /dev/null): runc leaves it alone;
//   - it is an anonymous pipe or a socket: inodes no host path reaches.
//     Engines hand pipes: containerd's shims (Docker's, CRI's, ctr's and
//     bulkhead's own) open their FIFOs themselves and give the backend
//     pipes they copy from. A named FIFO is refused like a file: a host
//     service reading /run/app.fifo would take the sandbox's writes, and
//     after the chown every process of uid on the host may open it;
//   - ownTerminal is set: the backend puts a pty of its own in place of
//     the caller's descriptors (OwnTerminal), so they are never the
//     process's.
//
// Everything else is refused: a regular file (the host's file itself),
// a pty slave or serial tty (the caller's terminal: uid would read the
// keystrokes typed into it, a sudo password among them, until logout),
// a memory device other than /dev/null (uid could chmod the host's
// /dev/urandom). runsc is judged alike: the policy does not rest on a
// backend's not chowning. runsc chowns /dev/null too (to the sandbox's
// host user), so for runsc ShieldNullStdio puts a private null device in
// its place.
func (b *Backend) JudgeStdioOwner(uid uint32, ownTerminal bool) error {
	if ownTerminal {
		return nil
	}
	for fd := 0; fd < len(streamNames); fd++ {
		if err := judgeStdioWritable(fd); err != nil {
			return err
		}
	}
	// Every stream refused is named at once: a caller at a terminal has
	// all three on it, and one refusal per attempt took three attempts.
	var refused, advice []string
	for fd := 0; fd < len(streamNames); fd++ {
		what, err := judgeStdioOwnerFile(fd, b.StdioOwner(uid))
		if err != nil {
			return err
		}
		if what != "" {
			refused = append(refused, what)
			advice = append(advice, streamAdvice[fd])
		}
	}
	if len(refused) == 0 {
		return nil
	}
	it := "it"
	if len(refused) > 1 {
		it = "them"
	}
	whom := "runc would give " + it + " to the container's uid"
	if b.IsGVisor() {
		whom = "runsc would give " + it + " to the sandbox's host user, uid"
	}
	return fmt.Errorf("%s; %s %d, for good, on the host; hand a pipe or /dev/null: %s",
		strings.Join(refused, "; "), whom, b.StdioOwner(uid), strings.Join(advice, "; "))
}

// judgeStdioWritable refuses a stdio stream that is a regular file the
// job could write (jobMayWrite): stdout and stderr above all, which the
// job writes by design.
func judgeStdioWritable(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil // JudgeHanded has judged what else it is
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return fmt.Errorf("%s (descriptor %d): %w", streamNames[fd], fd, err)
	}
	why := jobMayWrite(fd, flags, &st)
	if why == "" {
		return nil
	}
	what := "a file the job could write"
	if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil {
		what += " (" + target + ")"
	}
	h := mayWriteRefusal(why)
	return fmt.Errorf("%s (descriptor %d) is %s: %s; hand the container %s instead: %s", streamNames[fd], fd, what, h.why, h.instead, streamAdvice[fd])
}

// streamAdvice is how a shell hands each stdio stream a pipe or the null
// device, by descriptor: a script that writes a job's output to a file
// puts a cat between them.
var streamAdvice = [3]string{
	"stdin from a pipe (cat file | ...) or </dev/null",
	"stdout to a pipe (... | cat > out) or >/dev/null",
	"stderr to a pipe (... 2>&1 | cat > out) or 2>/dev/null",
}

// anonymousPipe tells a pipe (pipefs, reached by no path) from a named
// FIFO, which has the same file type but lives where its path is.
func anonymousPipe(fd int) bool {
	var fs unix.Statfs_t
	return unix.Fstatfs(fd, &fs) == nil && fs.Type == unix.PIPEFS_MAGIC
}

// gvisorStdioOwner is the host user runsc gives every stdio descriptor it
// hands a sandbox (nobody), whatever uid the process runs as inside: a
// file of uid 1000 handed to a process of uid 1000 became 65534's.
const gvisorStdioOwner = 65534

// StdioOwner is the uid b leaves the caller's stdio descriptors to for a
// process that runs as uid: runc's init chowns them to that uid, runsc to
// its sandbox's host user.
func (b *Backend) StdioOwner(uid uint32) uint32 {
	if b.IsGVisor() {
		return gvisorStdioOwner
	}
	return uid
}

// OwnTerminal tells whether b gives a process whose spec sets terminal a
// pty of its own, so that none of the caller's stdio reaches it. runc
// always does: with a console socket it sends the master there, without
// one (exec -t) it proxies the caller's stdio to a pty its init made, and
// either way the init dups the pty over its stdio before the chown
// (setupConsole). runsc does only when given a console socket: without
// one it makes the caller's own descriptors the process's terminal and
// chowns them to the sandbox's user. Any other backend is trusted with a
// console socket only.
func (b *Backend) OwnTerminal(terminal, consoleSocket bool) bool {
	return terminal && (consoleSocket || b.Kind() == "runc")
}

// judgeStdioOwnerFile judges one stdio descriptor for JudgeStdioOwner,
// which the backend would give to uid: what it is when refused, "" when
// it may be handed.
func judgeStdioOwnerFile(fd int, uid uint32) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("%s (descriptor %d): fstat: %w", streamNames[fd], fd, err)
	}
	kind := st.Mode & unix.S_IFMT
	switch {
	case st.Uid == uid, kind == unix.S_IFSOCK:
		return "", nil
	case kind == unix.S_IFIFO && anonymousPipe(fd):
		return "", nil
	case kind == unix.S_IFCHR && unix.Major(st.Rdev) == 1 && unix.Minor(st.Rdev) == 3:
		return "", nil // /dev/null, which runc never chowns
	}
	what := "a file"
	switch kind {
	case unix.S_IFREG:
		what = "a regular file"
	case unix.S_IFIFO:
		what = "a named FIFO"
	case unix.S_IFCHR:
		if name, _ := handedCharDevice(unix.Major(st.Rdev), unix.Minor(st.Rdev)); name != "" {
			what = name
		} else {
			what = "a character device"
		}
	}
	if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil {
		what += " (" + target + ")"
	}
	return fmt.Sprintf("%s (descriptor %d) is %s owned by uid %d", streamNames[fd], fd, what, st.Uid), nil
}

// JudgeMemberCapture refuses, for the start of a gVisor pod's container,
// stdout and stderr that are one pipe or socket: a caller's capture of
// start's own output, as containerd's runc shim (bulkhead's) takes every
// verb's, reading it to its end. runsc creates such a container at start
// and keeps start's stdio as its stdout and stderr for its life, so that
// start never ended and everything the job wrote grew the caller's memory
// on the host, past the container's own limit. A container's own streams
// are two (CRI keeps stdout and stderr apart), or a terminal.
func JudgeMemberCapture() error {
	var out, errOut unix.Stat_t
	if unix.Fstat(1, &out) != nil || unix.Fstat(2, &errOut) != nil {
		return nil
	}
	kind := out.Mode & unix.S_IFMT
	if (kind == unix.S_IFIFO || kind == unix.S_IFSOCK) && out.Dev == errOut.Dev && out.Ino == errOut.Ino {
		return errors.New("its stdout and stderr are one pipe, the caller's capture of start's own output (containerd's runc shim, bulkhead's too, reads it to its end); runsc would keep it as the container's for the container's life, so the start would never end and the caller would hold all the job writes: a gVisor pod's containers need a caller that hands them their own streams at start (gVisor's shim does); run the pod on runc (runtime class bulkhead), or the job with ctr or Docker on bulkhead-runsc")
	}
	return nil
}

// runcTaskServices are the executables of containerd's runc task service:
// containerd's runc shims (v2, and v1 and the legacy shim, which
// containerd 1.6 still installs) and bulkhead's, which is that service
// wrapped.
var runcTaskServices = map[string]bool{"containerd-shim-runc-v2": true, "containerd-shim-runc-v1": true,
	"containerd-shim": true, "containerd-shim-bulkhead-v2": true}

// JudgeMemberCaller refuses, for the create of a gVisor pod's container, a
// caller that is containerd's runc task service (by its executable, the
// parent's): it hands every start its own output as one pipe, which
// JudgeMemberCapture refuses, and the container that refusal leaves
// created is one runsc never signals, so the engine could neither stop
// nor remove it, nor its pod. Refused at create, it never exists.
func JudgeMemberCaller() error {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(os.Getppid()) + "/exe")
	if err != nil {
		return nil
	}
	return memberCallerRefusal(exe)
}

// memberCallerRefusal is JudgeMemberCaller's answer for the caller's
// executable, as /proc/PID/exe names it.
func memberCallerRefusal(exe string) error {
	name := filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	if !runcTaskServices[name] {
		return nil
	}
	return fmt.Errorf("its caller is containerd's runc task service (%s), which hands start its own output as one pipe: runsc would keep it as the container's for the container's life, so the start would be refused, and runsc never signals a container left created, which the engine then could not stop or remove, nor its pod: a gVisor pod's containers need gVisor's own shim (containerd-shim-runsc-v1, with bulkhead-runsc as its runsc); run the pod on runc (runtime class bulkhead), or the job with ctr or Docker on bulkhead-runsc", name)
}
