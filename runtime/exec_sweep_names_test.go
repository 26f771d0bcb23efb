package runtime

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestInContainerEscapesTheName: a process of the workload names itself;
// the message that names it must not carry its escape sequences or line
// breaks to the caller's terminal.
func TestInContainerEscapesTheName(t *testing.T) {
	// The shell keeps the name it gave itself; an exec would reset it.
	sh := exec.Command("sh", "-c", `printf '\033[2K\rOK\n\033[8m' > /proc/$$/comm; while :; do sleep 1; done`)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sh.Process.Kill(); _ = sh.Wait() }()
	named := false
	for i := 0; i < 100 && !named; i++ {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(sh.Process.Pid) + "/comm")
		named = strings.HasPrefix(string(b), "\x1b")
		time.Sleep(10 * time.Millisecond)
	}
	if !named {
		t.Fatal("the shell did not name itself")
	}
	msg := inContainer(sh.Process.Pid, errors.New("killed")).Error()
	if strings.ContainsAny(msg, "\x1b\r\n") {
		t.Errorf("message %q carries the name's escape, carriage return or line break", msg)
	}
	if !strings.Contains(msg, `\x1b[2K\x0dOK\x0a\x1b[8m`) {
		t.Errorf("message %q does not show the name escaped", msg)
	}
}
