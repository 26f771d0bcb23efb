package binaries

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NeedRoot skips a test that creates containers unless it runs as root
// and every tool is on PATH, saying which is missing.
func NeedRoot(t testing.TB, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: containers are created for real")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s on PATH (hack/install-deps.sh installs it): %v", tool, err)
		}
	}
}

// Result is what one run printed and returned.
type Result struct {
	Stdout, Stderr string
	Code           int
	// MaxRSS is the peak resident memory of the process (and of any
	// child it waited for), in bytes, from wait4's rusage.
	MaxRSS int64
}

// Cmd is how a test runs a binary: stdin (a text, or StdinFile as it
// is), variables added to the test's environment, working directory, and
// extra open files as fds 3, 4, …
type Cmd struct {
	Stdin      string
	StdinFile  *os.File
	Env        []string
	Dir        string
	ExtraFiles []*os.File
}

// Run runs name with args and a two-minute deadline. stdout and stderr are
// Captures: pipes, as an engine's fifos are, read up to the process's
// exit rather than to their end, which a created container holds open.
func (c Cmd) Run(t testing.TB, name string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Dir = c.Dir
	cmd.WaitDelay = 5 * time.Second
	cmd.ExtraFiles = c.ExtraFiles
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	}
	if c.StdinFile != nil {
		cmd.Stdin = c.StdinFile
	}
	out, err := NewCapture()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := NewCapture()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out.W, errOut.W
	err = cmd.Run()
	stdout, stderr := out.Collect(), errOut.Collect()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v", name, args, err)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024 // Linux reports KiB
	}
	return Result{stdout, stderr, code, rss}
}
