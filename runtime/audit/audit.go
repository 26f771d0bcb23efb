package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/escape"
	"bulkhead.dev/bulkhead/runtime/verify"
	"bulkhead.dev/bulkhead/specs"
)

// Entry is one line of the audit log: what was asked, what the
// policy decided, what the kernel showed and how it ended.
type Entry struct {
	Time        time.Time        `json:"time"`
	Event       string           `json:"event"`
	ID          string           `json:"id"`
	Bundle      string           `json:"bundle,omitempty"`
	Profile     string           `json:"profile,omitempty"`
	Backend     string           `json:"backend,omitempty"`
	Mode        specs.Mode       `json:"mode,omitempty"`
	SpecBefore  string           `json:"spec_sha256_before,omitempty"`
	SpecAfter   string           `json:"spec_sha256_after,omitempty"`
	Decisions   []specs.Decision `json:"decisions,omitempty"`
	SecretsGone []string         `json:"secret_env_removed,omitempty"`
	Checks      []verify.Check   `json:"verification,omitempty"`
	Deadline    *time.Time       `json:"deadline,omitempty"`
	Killed      *int             `json:"processes_killed,omitempty"`
	Outcome     string           `json:"outcome"`
	Changes     string           `json:"changes,omitempty"`
	ChangesTill *time.Time       `json:"changes_expire,omitempty"`
	Error       string           `json:"error,omitempty"`
	// An egress event is one connection of the job through the egress
	// broker: the destination it asked for, the address the broker
	// connected to, and the bytes each way (sent to the destination,
	// received from it).
	Destination   string `json:"destination,omitempty"`
	Address       string `json:"address,omitempty"`
	BytesSent     *int64 `json:"bytes_sent,omitempty"`
	BytesReceived *int64 `json:"bytes_received,omitempty"`
}

// Write appends one JSON line to the audit log. The line is written
// with a single write under an exclusive flock, so lines from parallel
// creates never interleave. Failing to audit is logged, not fatal: the
// container's boundary does not depend on it.
func Write(path string, e *Entry) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	f, err := Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return WriteTo(f, e)
}

// Open opens the audit log at path for appending, creating it: for a
// process that writes to it after it can no longer open it (the egress
// broker once it dropped its privileges).
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	return f, nil
}

// WriteTo appends e as one line to the open log f with a single write
// under an exclusive flock, so lines from parallel writers never
// interleave. The line holds only runes that show (escape.JSON).
func WriteTo(f *os.File, e *Entry) error {
	e.Time = time.Now().UTC()
	for _, d := range e.Decisions {
		if d.Rule == "environment" && d.Action == specs.Removed {
			name := strings.TrimSuffix(strings.TrimPrefix(d.Field, "process.env["), "]")
			e.SecretsGone = append(e.SecretsGone, name)
		}
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	// Destinations, ids, errors and refused values are text a job or a
	// caller chose; the line an operator reads shows them escaped.
	line = append(escape.JSON(line), '\n')
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("audit log %s: %w", f.Name(), err)
	}
	defer func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }()
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("audit log %s: %w", f.Name(), err)
	}
	return nil
}
