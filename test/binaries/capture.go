package binaries

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
)

// Capture is a pipe a run's stdout or stderr goes to. It is a pipe, not
// a file, because runc's init gives a stdio file to the container's uid
// (and bulkhead refuses one that is not already that uid's); it is read
// up to a marker, not to the end, because a created container's init
// inherits the write end and keeps it open while it lives. Once the
// process has exited, everything it wrote is in the pipe ahead of the
// marker Collect writes.
type Capture struct {
	W      *os.File // hand this to the process
	r      *os.File
	marker []byte
	got    chan string
}

// NewCapture opens the pipe and starts draining it, so a container that
// goes on writing never blocks on a full pipe.
func NewCapture() (*Capture, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	// Shorter than PIPE_BUF, so written at once, never interleaved.
	c := &Capture{W: w, r: r, marker: []byte("\x00end of output " + hex.EncodeToString(id[:]) + "\x00"), got: make(chan string, 1)}
	go c.drain()
	return c, nil
}

func (c *Capture) drain() {
	defer c.r.Close()
	var buf []byte
	chunk := make([]byte, 64<<10)
	sent := false
	for {
		n, err := c.r.Read(chunk)
		if !sent {
			buf = append(buf, chunk[:n]...)
			if i := bytes.Index(buf, c.marker); i >= 0 {
				c.got <- string(buf[:i])
				sent, buf = true, nil
			}
		}
		if err != nil {
			if !sent {
				c.got <- string(buf)
			}
			return
		}
	}
}

// Collect returns what was written to the pipe before the call: call it
// once the process has exited. Later writes (a detached container's) are
// drained and dropped.
func (c *Capture) Collect() string {
	_, _ = c.W.Write(c.marker)
	c.W.Close()
	return <-c.got
}
