package egresshost

import "bulkhead.dev/bulkhead/specs"

// BrokerBinary is the unprivileged broker's program, installed next to
// bulkhead.
const BrokerBinary = "bulkhead-egress-broker"

// Settings is what the unprivileged broker gets from the root one, on a
// pipe: it can no longer read the configuration or the record.
type Settings struct {
	Egress   []string   `json:"egress"`
	MaxConns int        `json:"max_conns"`
	MaxBytes int64      `json:"max_bytes"`
	ID       string     `json:"id"`
	Profile  string     `json:"profile"`
	Backend  string     `json:"backend"`
	Mode     specs.Mode `json:"mode"`
}

// The descriptors the root broker hands over, in the order of the
// broker's --serve-fds.
const (
	FdSettings = iota
	FdListener
	FdInit
	FdRecord
	FdAudit
	NServeFds
)
