package egress

import (
	"fmt"
	"io"
)

// MaxResponseHeaderBytes bounds what a destination may send the broker
// that the job gets nothing of: a response's header, a chunk's framing,
// a trailer. Parsing those keeps them in the broker's memory, which is
// outside the container's memory cgroup. It matches the bound on the
// job's own request headers.
const MaxResponseHeaderBytes = 64 << 10

var errResponseHeader = fmt.Errorf("the destination sent more than %d KiB of response header, chunk framing or trailer", MaxResponseHeaderBytes>>10)

// framingLimit reads from a destination, failing once more than
// MaxResponseHeaderBytes were read since the job was last given body
// bytes. A body is copied as it comes and never meets the bound; one
// read of it at a time is far below it.
type framingLimit struct {
	r       io.Reader
	pending int
}

func (l *framingLimit) Read(p []byte) (int, error) {
	if l.pending >= MaxResponseHeaderBytes {
		return 0, errResponseHeader
	}
	if left := MaxResponseHeaderBytes - l.pending; len(p) > left {
		p = p[:left]
	}
	n, err := l.r.Read(p)
	l.pending += n
	return n, err
}

// delivered is what the response body gives the job: every byte of it
// frees the bound again.
type delivered struct {
	body  io.Reader
	limit *framingLimit
}

func (d delivered) Read(p []byte) (int, error) {
	n, err := d.body.Read(p)
	if n > 0 {
		d.limit.pending = 0
	}
	return n, err
}
