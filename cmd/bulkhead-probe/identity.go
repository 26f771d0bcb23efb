package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// euidMarker prefixes the -print-euid line so the parent can tell the
// probe's answer from whatever another binary prints.
const euidMarker = "bulkhead-probe"

// procStatus reads /proc/self/status into a map. gVisor's status file has
// fewer fields than Linux's (no CapAmb, NoNewPrivs or Seccomp in the 2022
// build), so callers fall back to system calls for missing keys.
func procStatus() map[string]string {
	m := map[string]string{}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// secretFiles are root-owned files a default image may carry that an
// unprivileged user must not read. The first that exists and is not
// world-readable is tried; /proc/1/root is tried when pid 1 is another
// user's process (when the probe is pid 1 itself, it is its own root).
var secretFiles = []string{"/etc/shadow", "/etc/gshadow", "/root/.bash_history", "/etc/sudoers"}

// checkUID: the job runs as a non-root identity, so DAC protects root's
// files. Both parts are required: an identity check with nothing to try
// still passes, and says so.
func checkUID(env *probeEnv) Result {
	uid, euid, gid, egid := os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid()
	groups, _ := os.Getgroups()
	r := Result{Attempt: "getuid/getgid/getgroups; open a root-only file", Layer: protocol.LayerDAC}
	r.Observed = fmt.Sprintf("uid=%d gid=%d", uid, gid)
	var bad []string
	for name, id := range map[string]int{"uid": uid, "euid": euid, "gid": gid, "egid": egid} {
		if id == 0 {
			bad = append(bad, name+"=0")
		}
	}
	for _, g := range groups {
		if g == 0 {
			bad = append(bad, "supplementary group 0")
		}
	}
	target, why := rootOnlyTarget()
	if target == "" {
		r.Pass = len(bad) == 0
		r.Detail = "no root-only file to try: " + why
	} else {
		err := tryRead(target)
		r.Observed += "; " + target + ": " + errName(err)
		r.Pass = len(bad) == 0 && isErrno(err, unix.EACCES)
		if err == nil {
			r.Detail = target + " is readable"
		}
	}
	if len(bad) > 0 {
		r.Detail = strings.TrimPrefix(r.Detail+"; runs as "+strings.Join(bad, ", "), "; ")
	}
	return r
}

func rootOnlyTarget() (string, string) {
	for _, p := range secretFiles {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Uid == 0 && st.Mode&0o004 == 0 {
			return p, ""
		}
	}
	// /proc/1/root needs ptrace access to pid 1; it is meaningful only when
	// pid 1 belongs to someone else.
	var st unix.Stat_t
	if os.Getpid() != 1 && unix.Stat("/proc/1", &st) == nil && int(st.Uid) != os.Getuid() {
		return "/proc/1/root/", ""
	}
	return "", "none of " + strings.Join(secretFiles, ", ") + " is a root-owned non-world-readable file, and pid 1 is the probe or its own user"
}

func tryRead(path string) error {
	if strings.HasSuffix(path, "/") {
		_, err := os.ReadDir(path)
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// capSets are the five capability sets of /proc/self/status.
var capSets = []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}

// readCaps returns the five sets, from /proc/self/status where present and
// from capget/prctl where not (gVisor), so a missing line is never read as
// "no capabilities".
func readCaps() (map[string]uint64, string) {
	st := procStatus()
	caps := map[string]uint64{}
	var src []string
	for _, k := range capSets {
		if v, ok := st[k]; ok {
			if n, err := strconv.ParseUint(v, 16, 64); err == nil {
				caps[k] = n
				continue
			}
		}
		n, err := capFromSyscall(k)
		if k == "CapAmb" && isErrno(err, unix.EINVAL) {
			// PR_CAP_AMBIENT itself is unknown (gVisor): there is no
			// ambient set to hold anything.
			caps[k] = 0
			src = append(src, "CapAmb: PR_CAP_AMBIENT unsupported, no ambient set")
			continue
		}
		if err != nil {
			src = append(src, k+": "+errName(err))
			caps[k] = ^uint64(0) // unknown counts as "has capabilities": fail closed
			continue
		}
		caps[k] = n
		src = append(src, k+" from syscalls")
	}
	return caps, strings.Join(src, ", ")
}

func capFromSyscall(set string) (uint64, error) {
	switch set {
	case "CapInh", "CapPrm", "CapEff":
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return 0, err
		}
		pick := func(d unix.CapUserData) uint32 {
			switch set {
			case "CapInh":
				return d.Inheritable
			case "CapPrm":
				return d.Permitted
			}
			return d.Effective
		}
		return uint64(pick(data[0])) | uint64(pick(data[1]))<<32, nil
	case "CapBnd", "CapAmb":
		var v uint64
		for c := 0; c < 64; c++ {
			var n int
			var err error
			if set == "CapBnd" {
				n, err = unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
			} else {
				n, err = unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0)
			}
			if err != nil {
				if c == 0 {
					return 0, err
				}
				break // EINVAL past the last capability the kernel knows
			}
			if n == 1 {
				v |= 1 << c
			}
		}
		return v, nil
	}
	return 0, fmt.Errorf("unknown set %s", set)
}

// checkCapabilities: all five sets empty, and two operations that need a
// capability fail with EPERM. Seccomp profiles also answer EPERM, so each
// attempt is paired with a control call of the same system call that needs
// no capability: if the control call succeeds, seccomp allows the syscall
// and the EPERM of the privileged variant comes from the capability check.
//   - fchownat of our own file to our own uid (allowed) vs to uid 0 (CAP_CHOWN)
//   - setuid(getuid()) (allowed) vs setuid(0) (CAP_SETUID), in a child so a
//     success cannot turn the probe itself into root.
func checkCapabilities(env *probeEnv) Result {
	r := Result{Attempt: "read Cap* sets; fchownat(own file, 0); setuid(0)", Layer: protocol.LayerCapabilities}
	caps, src := readCaps()
	var sets, nonzero []string
	for _, k := range capSets {
		sets = append(sets, fmt.Sprintf("%s=%x", k, caps[k]))
		if caps[k] != 0 {
			nonzero = append(nonzero, k)
		}
	}
	var notes []string
	if src != "" {
		notes = append(notes, src)
	}
	pass := len(nonzero) == 0
	if !pass {
		notes = append(notes, "non-empty: "+strings.Join(nonzero, ","))
	}

	chown := chownAttempt()
	notes = append(notes, "chown: "+chown.detail)
	pass = pass && chown.pass

	set := setuidAttempt()
	notes = append(notes, "setuid: "+set.detail)
	pass = pass && set.pass

	r.Observed = fmt.Sprintf("CapEff=%x; chown→%s; setuid(0)→%s", caps["CapEff"], chown.observed, set.observed)
	r.Pass = pass
	r.Detail = strings.Join(append([]string{strings.Join(sets, " ")}, notes...), "; ")
	return r
}

type attempt struct {
	observed string
	pass     bool
	detail   string
}

func chownAttempt() attempt {
	path := probeFile(tmpDir, "chown")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return attempt{observed: "untried", pass: true, detail: "no writable /tmp to own a file in (" + errName(err) + ")"}
	}
	defer os.Remove(path)
	ctl := unix.Fchownat(unix.AT_FDCWD, path, os.Getuid(), os.Getgid(), 0)
	err := unix.Fchownat(unix.AT_FDCWD, path, 0, -1, 0)
	a := attempt{observed: errName(err)}
	switch {
	case err == nil:
		a.detail = "gave a file to root: CAP_CHOWN is effective"
	case isErrno(err, unix.EPERM) && ctl == nil:
		a.pass = true
		a.detail = "EPERM with fchownat allowed by seccomp (chown to self: ok)"
	case isErrno(err, unix.EPERM):
		a.pass = true
		a.detail = "EPERM, but fchownat to self also failed (" + errName(ctl) + "): may be seccomp"
	default:
		a.detail = "unexpected " + errName(err)
	}
	return a
}

func setuidAttempt() attempt {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/proc/self/exe", "-child-setuid").Output()
	if err != nil {
		return attempt{observed: "untried", detail: "child failed: " + errName(err) + " " + strings.TrimSpace(string(out))}
	}
	// The child prints "self=<errno> root=<errno>".
	fields := map[string]string{}
	for _, f := range strings.Fields(string(out)) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	a := attempt{observed: fields["root"]}
	switch {
	case fields["root"] == "ok":
		a.detail = "setuid(0) succeeded: CAP_SETUID is effective"
	case fields["root"] == "EPERM" && fields["self"] == "ok":
		a.pass = true
		a.detail = "EPERM with setuid allowed by seccomp (setuid(self): ok)"
	case fields["root"] == "EPERM":
		a.pass = true
		a.detail = "EPERM, but setuid(self) gave " + fields["self"] + ": may be seccomp"
	default:
		a.detail = "unexpected: " + strings.TrimSpace(string(out))
	}
	return a
}

// childSetuidMain runs in a child: Go's syscall.Setuid changes every thread
// of the process, so trying it in the probe itself could leave the probe
// running as root if the capability layer were missing.
func childSetuidMain(w io.Writer) int {
	self := syscall.Setuid(os.Getuid())
	root := syscall.Setuid(0)
	fmt.Fprintf(w, "self=%s root=%s\n", errName(self), errName(root))
	return 0
}

// checkNoNewPrivs: NoNewPrivs is set, and exec of a setuid-root binary
// gains nothing (the kernel ignores the set-user-ID bit under
// no_new_privs).
func checkNoNewPrivs(env *probeEnv) Result {
	r := Result{Attempt: "read NoNewPrivs; exec a setuid-root binary and read its euid", Layer: protocol.LayerNoNewPrivs}
	nnp, ok := procStatus()["NoNewPrivs"]
	if !ok {
		n, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		if err != nil {
			nnp = errName(err)
		} else {
			nnp = strconv.Itoa(n) + " (prctl)"
		}
	}
	flagOK := strings.HasPrefix(nnp, "1")
	r.Observed = "NoNewPrivs: " + nnp

	bin, why := setuidBinary(env.setuid)
	if bin == "" {
		r.Pass = flagOK
		r.Detail = "setuid exec skipped: " + why
		return r
	}
	euid, detail := setuidEuid(bin)
	r.Observed += "; " + bin + " euid=" + euid
	r.Pass = flagOK && euid != "" && euid != "0" && euid != "?"
	r.Detail = detail
	return r
}

// setuidBinary picks the setuid-root file to exec: -setuid, else
// /bin/busybox if it carries the bit.
func setuidBinary(flagPath string) (string, string) {
	cands := []string{"/bin/busybox"}
	if flagPath != "" {
		cands = []string{flagPath}
	}
	for _, p := range cands {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			continue
		}
		if st.Uid == 0 && st.Mode&unix.S_ISUID != 0 {
			return p, ""
		}
	}
	return "", "no setuid-root binary among " + strings.Join(cands, ", ")
}

// setuidEuid execs bin and returns the euid it ran with. The probe itself
// (copied setuid) answers -print-euid. Busybox cannot print its euid
// before dropping privileges (applets like id are BB_SUID_DROP), so it is
// asked for an applet that requires setuid (crontab, BB_SUID_REQUIRE):
// busybox refuses with "must be suid to work properly" when its euid is
// not 0, which is exactly the no_new_privs evidence.
func setuidEuid(bin string) (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-print-euid").CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, euidMarker+" euid="); ok {
			euid, _, _ := strings.Cut(rest, " ")
			return euid, "exec of setuid-root " + bin + " ran with euid " + euid
		}
	}
	if strings.Contains(filepath.Base(bin), "busybox") {
		cmd := exec.CommandContext(ctx, bin, "crontab", "-l")
		out, _ = cmd.CombinedOutput()
		if strings.Contains(string(out), "must be suid") {
			return strconv.Itoa(os.Getuid()), "busybox crontab: " + strings.TrimSpace(string(out)) + " (euid stayed non-root)"
		}
		return "0", "busybox crontab ran past its setuid check, so its euid was 0: " + strings.TrimSpace(string(out))
	}
	return "?", fmt.Sprintf("cannot tell the euid of %s (%s): %q", bin, errName(err), strings.TrimSpace(string(out)))
}
