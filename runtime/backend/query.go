package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Query runs a backend and returns its stdout, its stderr discarded,
// within the backend's timeout. All three are pipes: runsc gives the
// descriptors it is handed to the sandbox's user, and os/exec would hand
// it the host's /dev/null for stdin and stderr.
func Query(argv []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stderr = strings.NewReader(""), io.Discard
	return cmd.Output()
}

// Status is the status the backend's state verb reports, argv being its
// command line for `state ID`; "" when it reports none.
func Status(argv []string) string {
	out, err := Query(argv)
	if err != nil {
		return ""
	}
	var s struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(out, &s)
	return s.Status
}

// CountProcesses is how many processes the backend lists, argv being its
// command line for `ps --format json ID`.
func CountProcesses(argv []string) (int, error) {
	out, err := Query(argv)
	if err != nil {
		return 0, err
	}
	var procs []json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(out), &procs); err != nil {
		return 0, fmt.Errorf("ps output %q: %w", out, err)
	}
	return len(procs), nil
}
