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
	_, err = os.ReadFile("/etc/hosts")
	check("read /etc/hosts", err, false)
	c, err := net.Dial("tcp", ln.Addr().String())
	check("dial", err, false)
	if err == nil {
		c.Close()
	}
	if bad == 0 {
		os.Stdout.WriteString(filterDone)
	}
	return bad
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
