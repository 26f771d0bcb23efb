package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

const (
	tmpDir = "/tmp"
	// tmpSlack allows for tmpfs rounding and for what else already sits in
	// /tmp; more than that means the size option is not what the policy says.
	tmpSlack = 1 << 20
	// tmpWriteCap is the least the fill may write (tmpFillCap): what the
	// default profile's /tmp has always been probed with. The bound keeps
	// a /tmp without a size limit (or on the host's disk) from costing
	// more before the control gives up.
	tmpWriteCap = 48 << 20
)

func probeFile(dir, what string) string {
	return filepath.Join(dir, fmt.Sprintf(".bulkhead-probe-%s-%d", what, os.Getpid()))
}

// checkWorkspace: a host folder bind-mounted into the sandbox. A plain
// bind is read-only, so creating a file must fail with EROFS (EACCES would
// mean only file permissions protect the host's files). A workspace is a
// copy-on-write layer: the write succeeds inside, and only the host can
// tell that its folder stayed unchanged, so the file is left in place for
// the host to look for (workspaceMarker) and the verdict is the host's.
func checkWorkspace(env *probeEnv) Result {
	r := Result{Attempt: "create a file in " + env.workspace}
	if env.workspace == "" {
		return skipped("", "create a file in the workspace", "no workspace given")
	}
	if st, err := os.Stat(env.workspace); err != nil || !st.IsDir() {
		how := "given with -workspace"
		if !env.workspaceFlag {
			how = "default"
		}
		return skipped("", r.Attempt, fmt.Sprintf("%s (%s) is not mounted here: %s", env.workspace, how, errName(err)))
	}
	err := os.WriteFile(filepath.Join(env.workspace, workspaceMarker), []byte("written by bulkhead-probe\n"), 0o644)
	r.Observed = errName(err)
	r.Layer = writeLayer(err)
	r.Pass = isErrno(err, unix.EROFS)
	switch {
	case err == nil:
		r.Observed, r.Layer = "written", protocol.LayerNone
		r.Detail = "the write went through inside; only the host can tell whether its folder changed (a copy-on-write workspace keeps it unchanged)"
	case !r.Pass:
		r.Detail = "refused, but not by a read-only mount"
	}
	return r
}

// workspaceMarker is the file the workspace control writes; the host
// looks for it in its folder.
const workspaceMarker = ".bulkhead-probe-workspace"

// checkEtc: the root filesystem is read-only. Creating a file in /etc as a
// non-root user could also fail with EACCES (root owns /etc); the kernel
// checks the mount before permissions when creating (lookup_open returns
// EROFS before may_o_create), so EROFS proves the mount and EACCES proves
// only DAC.
func checkEtc(env *probeEnv) Result {
	path := "/etc/bulkhead-probe"
	r := Result{Attempt: "open " + path + " for writing (O_CREAT)"}
	_, statErr := os.Lstat(path)
	existed := statErr == nil
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err == nil {
		f.Close()
		if !existed {
			os.Remove(path)
		}
	}
	r.Observed = errName(err)
	r.Layer = writeLayer(err)
	r.Pass = isErrno(err, unix.EROFS)
	switch {
	case err == nil:
		r.Layer = protocol.LayerNone
		r.Detail = "the root filesystem is writable"
	case isErrno(err, unix.EACCES) && env.gvisor && mountinfoReadOnly("/"):
		// gVisor checks permissions before the mount when creating, so
		// there EACCES hides a read-only root mount; mountinfo shows it.
		r.Pass = true
		r.Layer = LayerGVisorDACFirst
		r.Detail = "gVisor checks file permissions before the read-only mount when creating; /proc/self/mountinfo shows / read-only"
	case isErrno(err, unix.EACCES):
		if readOnlyFS("/etc") {
			r.Detail = "file permissions answered first although the mount is read-only (statfs/mountinfo); accepted only under gVisor (-gvisor)"
		} else {
			r.Detail = "only file permissions refused it: statfs and mountinfo report the root filesystem writable"
		}
	}
	return r
}

// checkTmpWrite: /tmp must be usable scratch space.
func checkTmpWrite(env *probeEnv) Result {
	path := probeFile(tmpDir, "write")
	r := Result{Attempt: "write and read back " + path, Layer: protocol.LayerTmpfs}
	defer os.Remove(path)
	data := []byte("bulkhead-probe\n")
	err := os.WriteFile(path, data, 0o600)
	if err == nil {
		var got []byte
		got, err = os.ReadFile(path)
		if err == nil && string(got) != string(data) {
			err = errors.New("read back different content")
		}
	}
	r.Observed = errName(err)
	r.Pass = err == nil
	r.Detail = "filesystem " + fsType(tmpDir)
	if err != nil {
		if l := writeLayer(err); l != "" {
			r.Layer = l
		}
	}
	return r
}

// checkTmpNoexec: a copy of the probe in /tmp must not execute. The kernel
// answers EACCES for a noexec mount (do_open_execat → path_noexec), which
// the errno alone cannot tell from a missing x bit; the copy is made 0755
// so the only reason left is the mount flag.
func checkTmpNoexec(env *probeEnv) Result {
	path := probeFile(tmpDir, "exec")
	r := Result{Attempt: "copy /proc/self/exe to " + path + " (0755) and execve it"}
	defer os.Remove(path)
	if err := copyExe(path); err != nil {
		r.Observed = errName(err)
		r.Layer = protocol.LayerNone
		r.Detail = "could not copy the probe into /tmp (tmp-write shows why)"
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-print-euid").CombinedOutput()
	r.Observed = errName(err)
	switch {
	case err == nil:
		r.Layer = protocol.LayerNone
		r.Detail = fmt.Sprintf("the copy ran: %q", string(out))
	case isErrno(err, unix.EACCES):
		r.Layer = protocol.LayerTmpfs
		r.Pass = true
		r.Detail = "noexec mount"
	default:
		r.Layer = protocol.LayerNone
		r.Detail = fmt.Sprintf("%v %s", err, out)
	}
	return r
}

func copyExe(dst string) error {
	in, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, 0o755) // the umask may have cut the x bits
}

// checkTmpSize fills /tmp until ENOSPC; the tmpfs size option is the layer.
// The file is removed afterwards so later controls (and the memory cgroup,
// which tmpfs pages are charged to) start clean.
func checkTmpSize(env *probeEnv) Result {
	path := probeFile(tmpDir, "fill")
	size := env.policy.tmpSize
	fill := tmpFillCap(size)
	r := Result{Attempt: fmt.Sprintf("write %s in 1 MiB chunks until ENOSPC (at most %d MiB)", path, fill>>20)}
	defer os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		r.Observed = errName(err)
		r.Layer = protocol.LayerNone
		r.Detail = "cannot create a file in /tmp"
		return r
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i) // not zero: nothing may dedupe or sparse it
	}
	var written int64
	for written < fill {
		n, werr := f.Write(chunk)
		written += int64(n)
		if werr != nil {
			err = werr
			break
		}
	}
	r.Value = num(float64(written))
	r.Observed = errName(err)
	if err == nil {
		r.Observed = "no error"
	}
	r.Detail = fmt.Sprintf("wrote %d bytes; filesystem %s; limit %d + slack %d", written, fsType(tmpDir), size, tmpSlack)
	switch {
	case isErrno(err, unix.ENOSPC):
		r.Layer = protocol.LayerTmpfs
		r.Pass = size > 0 && written <= size+tmpSlack
		switch {
		case size == 0:
			r.Detail += ": the policy sets no /tmp size to hold it to"
		case !r.Pass:
			r.Detail += fmt.Sprintf(": /tmp is larger than the policy's %s", mib(size))
		}
	case err == nil:
		r.Layer = protocol.LayerNone
		r.Detail += ": no limit reached"
	default:
		r.Layer = writeLayer(err)
	}
	return r
}

// readOnlyFS reports whether path's mount is read-only: statfs's ST_RDONLY,
// or the mount options in /proc/self/mountinfo (gVisor's statfs leaves
// ST_RDONLY clear on its read-only root; its mountinfo says "ro").
func readOnlyFS(path string) bool {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) == nil && st.Flags&unix.ST_RDONLY != 0 {
		return true
	}
	return mountinfoReadOnly(path)
}

// fsType names the filesystem at path for details ("tmpfs", "overlay", …).
func fsType(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "unknown (" + errName(err) + ")"
	}
	switch uint32(st.Type) {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlay"
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.V9FS_MAGIC:
		return "9p"
	case unix.PROC_SUPER_MAGIC:
		return "proc"
	}
	return fmt.Sprintf("0x%x", st.Type)
}

func isErrno(err error, want unix.Errno) bool {
	e, ok := errnoOf(err)
	return ok && e == want
}
