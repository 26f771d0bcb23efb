// Package egressmux is the multiplexing between a runsc sandbox's egress
// forwarder and its broker: one stream, which bulkhead connects on the
// host and donates to the forwarder, carries each of the job's
// connections as a stream of its own. Both ends take their configuration
// from here; the forwarder is a static program, so this package uses no
// cgo.
package egressmux

import (
	"io"
	"time"

	"github.com/hashicorp/yamux"
)

// Config is the multiplexing both ends use. Each stream's window bounds
// what one connection buffers; the backlog bounds streams opened before
// the broker accepts them (its connection limit is judged after that).
func Config() *yamux.Config {
	c := yamux.DefaultConfig()
	c.AcceptBacklog = 64
	c.EnableKeepAlive = false
	c.ConnectionWriteTimeout = 30 * time.Second
	// A stream one end closed is reset after this, whatever the other
	// end does: until then it holds up to a window of what that end
	// sends and nobody reads (yamux's default is five minutes).
	c.StreamCloseTimeout = 2 * time.Second
	c.LogOutput = io.Discard
	return c
}
