package egress

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// filterChild is set in the process that installs the filter: a filter
// cannot be taken off, so it runs in a re-exec of the test binary.
const filterChild = "BULKHEAD_EGRESS_FILTER_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(filterChild); dir != "" {
		os.Exit(underFilter(dir))
	}
	os.Exit(m.Run())
}

// underFilter tries, under the broker's filter, what a taken-over broker
// would: run a program, write a file, signal another process. Each must
// fail with EPERM, while what the broker does (read the resolver's files,
// listen, dial) still works. Its exit status is the number of failures.
func underFilter(dir string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 100
	}
	if err := InstallFilter(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 101
	}
	bad := 0
	check := func(what string, err error, wantEPERM bool) {
		if got := errors.Is(err, syscall.EPERM); got != wantEPERM {
			os.Stderr.WriteString(what + ": " + errString(err) + "\n")
			bad++
		}
	}
	// Exec in this process: were it allowed, /bin/true would replace
	// it, and the parent would miss the last line.
	check("execve", syscall.Exec("/bin/true", []string{"true"}, nil), true)
	_, err = os.OpenFile(filepath.Join(dir, "written"), os.O_CREATE|os.O_WRONLY, 0o600)
	check("open for writing", err, true)
	check("kill another process", syscall.Kill(os.Getppid(), 0), true)
	var lim unix.Rlimit
	check("read another process's limits", unix.Prlimit(os.Getppid(), unix.RLIMIT_NOFILE, nil, &lim), true)
	check("read its own limits", unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &lim), false)
	check("clone into a new user namespace", cloneNewUser(), true)
	if _, _, e := syscall.RawSyscall(unix.SYS_CLONE3, 0, 0, 0); e != syscall.ENOSYS {
		os.Stderr.WriteString("clone3: " + errString(e) + ", want ENOSYS\n")
		bad++
	}
	for _, sock := range []struct {
		what                   string
		family, kind, protocol int
	}{
		{"an AF_ALG socket", unix.AF_ALG, unix.SOCK_SEQPACKET, 0},
		{"an AF_VSOCK socket", unix.AF_VSOCK, unix.SOCK_STREAM, 0},
		{"a netlink uevent socket", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_KOBJECT_UEVENT},
		{"an MPTCP socket", unix.AF_INET, unix.SOCK_STREAM, 262},
		{"a UDP-Lite socket", unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDPLITE},
		{"an SCTP socket", unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP},
	} {
		fd, err := unix.Socket(sock.family, sock.kind, sock.protocol)
		if err == nil {
			unix.Close(fd)
		}
		check(sock.what, err, true)
	}
	if _, err := syscall.NetlinkRIB(syscall.RTM_GETROUTE, syscall.AF_UNSPEC); err != nil {
		os.Stderr.WriteString("read the routing tables: " + err.Error() + "\n")
		bad++
	}
	_, err = os.ReadFile("/etc/hosts")
	check("read /etc/hosts", err, false)
	c, err := net.Dial("tcp", ln.Addr().String())
	check("dial", err, false)
	if err == nil {
		if raw, rerr := c.(*net.TCPConn).SyscallConn(); rerr == nil {
			var serr error
			raw.Control(func(fd uintptr) { serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_ULP, "tls") })
			check("attach kTLS (TCP_ULP)", serr, true)
			// The kernel reads the low 32 bits of level and option.
			for _, hi := range [][2]uintptr{{unix.IPPROTO_TCP | 1<<32, unix.TCP_ULP}, {unix.IPPROTO_TCP, unix.TCP_ULP | 1<<32}} {
				tls := []byte("tls")
				raw.Control(func(fd uintptr) {
					_, _, e := syscall.Syscall6(unix.SYS_SETSOCKOPT, fd, hi[0], hi[1], uintptr(unsafe.Pointer(&tls[0])), uintptr(len(tls)), 0)
					serr = nil
					if e != 0 {
						serr = e
					}
				})
				check("TCP_ULP with high bits set", serr, true)
			}
			raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) })
			check("TCP_NODELAY", serr, false)
		}
		c.Close()
	}
	if u, err := net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
		check("a UDP socket (DNS)", err, false)
	} else {
		u.Close()
	}
	if bad == 0 {
		os.Stdout.WriteString(filterDone)
	}
	return bad
}

// cloneNewUser forks into a new user namespace, as a taken-over broker
// would to gain capabilities there; a child that was made exits at once.
func cloneNewUser() error {
	pid, _, e := syscall.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	if pid == 0 {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(int(pid), &ws, 0, nil)
	return nil
}

// filterDone is the child's last line when every attempt went as it must.
const filterDone = "every attempt answered as the filter says\n"

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

func TestFilterRefusesWhatTheBrokerNeverDoes(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), filterChild+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), filterDone) {
		t.Fatalf("under the broker's filter: %v\n%s", err, out)
	}
}
