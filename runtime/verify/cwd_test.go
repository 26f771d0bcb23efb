package verify

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A process whose working directory lies outside its root, as a cwd
// through a leaked host descriptor leaves it, fails the cwd check; one
// inside passes.
func TestVerifyCwdOutsideRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: chroot needs root")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to chroot a process here (hack/install-deps.sh installs it): %v", err)
	}
	jail := t.TempDir()
	for _, c := range []struct {
		name, chdir string
		inside      bool
	}{
		{"outside", "/", false},
		{"inside", jail, true},
	} {
		// chroot(2) leaves the cwd where it was.
		cmd := exec.Command(py, "-c", "import os, time, sys; os.chdir(sys.argv[2]); os.chroot(sys.argv[1]); print('ok', flush=True); time.sleep(60)", jail, c.chdir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready, rerr := bufio.NewReader(out).ReadString('\n')
		var r Report
		verr := verifyCwd(&r, cmd.Process.Pid)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if rerr != nil || ready != "ok\n" {
			t.Fatalf("%s: the chrooted process did not start: %v %q", c.name, rerr, ready)
		}
		if verr != nil {
			t.Fatalf("%s: %v", c.name, verr)
		}
		if len(r) != 1 || r[0].OK != c.inside {
			t.Fatalf("%s: %+v, want the check ok=%v", c.name, r, c.inside)
		}
		if !c.inside && !strings.Contains(r[0].Observed, `outside the container's root ("/"`) {
			t.Fatalf("%s: observed %q, want it to name the host's path", c.name, r[0].Observed)
		}
	}
}
