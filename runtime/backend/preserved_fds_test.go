package backend

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// preservedChildEnv makes the test binary the child of
// TestPreservedFilesOnlyTheCallers: a process that was handed one
// descriptor (3) and opens one of its own.
const preservedChildEnv = "BULKHEAD_TEST_PRESERVED_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(preservedChildEnv) == "1" {
		preservedChild()
		return
	}
	if os.Getenv(judgedStdinEnv) == "1" {
		judgedStdinChild()
		return
	}
	if os.Getenv(stdioOwnerEnv) != "" {
		stdioOwnerChild(os.Getenv(stdioOwnerEnv))
		return
	}
	os.Exit(m.Run())
}

// preservedChild prints what PreservedFiles makes of the handed
// descriptor alone and of a range that takes in one the process opened
// itself, as the create of a caller with --preserve-fds did: bulkhead's
// lock on /sys/fs/cgroup reached the container and ".." from it the
// host's root.
func preservedChild() {
	own, err := os.Open("/")
	if err != nil {
		os.Stdout.WriteString("open: " + err.Error() + "\n")
		os.Exit(1)
	}
	defer own.Close()
	if files, err := PreservedFiles(1); err != nil {
		os.Stdout.WriteString("handed: " + err.Error() + "\n")
	} else {
		os.Stdout.WriteString("handed: ok " + files[0].Name() + "\n")
	}
	if _, err := PreservedFiles(int(own.Fd()) - 2); err != nil {
		os.Stdout.WriteString("own: refused\n")
	} else {
		os.Stdout.WriteString("own: passed on\n")
	}
	if _, err := PreservedFiles(int(own.Fd()) + 8); err != nil {
		os.Stdout.WriteString("unopened: refused\n")
	} else {
		os.Stdout.WriteString("unopened: passed on\n")
	}
}

// TestPreservedFilesOnlyTheCallers: --preserve-fds hands the container the
// descriptors the caller handed bulkhead, never one bulkhead opened.
func TestPreservedFilesOnlyTheCallers(t *testing.T) {
	handed, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer handed.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), preservedChildEnv+"=1")
	cmd.ExtraFiles = []*os.File{handed}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	got := string(out)
	for _, want := range []string{"handed: ok preserved", "own: refused", "unopened: refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("child said %q, want %q in it", got, want)
		}
	}
}
