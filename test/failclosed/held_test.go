package failclosed

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
	"time"
)

// heldProcess is a bulkhead verb whose backend waits for the test: the
// backend makes the file reached once it is where the test holds it, and
// goes on once the test makes the file goOn.
type heldProcess struct {
	cmd        *exec.Cmd
	stderr     bytes.Buffer
	done       chan error
	what, goOn string
}

// startHeld starts cmd and returns once reached exists. what names the
// verb for failures. Whatever the test does next, the backend is let go
// and the verb ended when the test ends.
func startHeld(t *testing.T, cmd *exec.Cmd, what, reached, goOn string) *heldProcess {
	t.Helper()
	p := &heldProcess{cmd: cmd, done: make(chan error, 1), what: what, goOn: goOn}
	cmd.Stderr = &p.stderr
	// A created init holds the verb's stderr while it lives: the exit
	// status answers, not the end of its output.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		os.WriteFile(goOn, nil, 0o600)
		cmd.Process.Kill()
		p.done <- <-p.done
	})
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(reached); err == nil {
			return p
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%s ended (%v) before its backend was held:\n%s", what, err, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: its backend was not held within 90 s:\n%s", what, p.stderr.String())
		}
	}
}

// release lets the backend go on and waits for the verb's end.
func (p *heldProcess) release(t *testing.T) error {
	t.Helper()
	if err := os.WriteFile(p.goOn, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not end within 2 minutes of its backend:\n%s", p.what, p.stderr.String())
		return nil
	}
}
