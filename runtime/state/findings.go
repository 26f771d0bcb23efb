package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"bulkhead.dev/bulkhead/runtime/verify"
	"bulkhead.dev/bulkhead/specs"
)

// Findings are what the policy decided for a container and what the
// verification after create found. Only inspect, the probe and doctor
// read them, so they live beside the record rather than in it: every
// verb an engine calls reads the record, and with them it was 15 KB
// of JSON to decode instead of a few hundred bytes.
type Findings struct {
	Decisions []specs.Decision `json:"decisions,omitempty"`
	Checks    []verify.Check   `json:"checks,omitempty"`
}

// findingsFile is the findings' name in a container's state directory.
const findingsFile = "findings.json"

// WriteFindings records f beside rec; create writes them once, after
// the verification, only while the record is still its own (Update).
func (r *Registry) WriteFindings(rec *Record, f *Findings) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return r.whileOwned(rec, func() error {
		return specs.WriteVolatile(filepath.Join(r.Dir(rec.ID), findingsFile), data, 0o600)
	})
}

// Findings returns the findings of id. A container created by a bulkhead
// that kept them in its record has them there, under the same keys.
func (r *Registry) Findings(id string) (*Findings, error) {
	data, err := os.ReadFile(filepath.Join(r.Dir(id), findingsFile))
	if errors.Is(err, os.ErrNotExist) {
		data, err = os.ReadFile(r.recordPath(id))
	}
	if err != nil {
		return nil, err
	}
	var f Findings
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("findings of %s: %w", id, err)
	}
	return &f, nil
}
