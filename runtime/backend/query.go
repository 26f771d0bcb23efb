package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
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

// WaitStatus is the exit status runsc's wait verb reports, argv being its
// command line for `wait ID`: it returns once the container's process has
// exited, however long that takes, as the status a shell reports.
func WaitStatus(argv []string) (int, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stderr = strings.NewReader(""), &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var w struct {
		ExitStatus *int `json:"exitStatus"`
	}
	if err := json.Unmarshal(out, &w); err != nil || w.ExitStatus == nil {
		return 0, fmt.Errorf("wait reported no exit status: %q", out)
	}
	return *w.ExitStatus, nil
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
	procs, err := processes(argv)
	return len(procs), err
}

// processes are the processes the backend lists, each as its json, sorted,
// argv being its command line for `ps --format json ID`.
func processes(argv []string) ([]string, error) {
	out, err := Query(argv)
	if err != nil {
		return nil, err
	}
	var procs []json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(out), &procs); err != nil {
		return nil, fmt.Errorf("ps output %q: %w", out, err)
	}
	list := make([]string, len(procs))
	for i, p := range procs {
		list[i] = string(p)
	}
	slices.Sort(list)
	return list, nil
}
