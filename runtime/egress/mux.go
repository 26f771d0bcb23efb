package egress

import (
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"bulkhead.dev/bulkhead/runtime/egressmux"
)

// A gVisor sandbox has a loopback of its own that no host socket can
// listen on, and no host socket the sandbox may connect to without
// runsc's --host-uds, which opens every socket its filesystem shows, as
// host root. So the way between a runsc sandbox's forwarder and its broker
// is one stream bulkhead connects on the host and donates to the forwarder
// as its standard input (runsc exec gives the sandbox its descriptors),
// and each of the job's connections is a stream multiplexed over it.

// muxListener yields the streams of every session accepted on a unix
// listener, as connections of the job.
type muxListener struct {
	net.Listener
	max     int // streams a session may hold open, closing ones included
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
	err     error
}

// MuxListener serves, on each connection ln accepts, a multiplexed
// session, and accepts its streams while the session holds fewer than max
// open. Each stream buffers up to a window (256 KiB) of what the job sends
// before the broker reads it, outside the container's memory limit, so a
// session past max gets no stream accepted until some close: its new ones
// wait in yamux's backlog (egressmux.Config), and past that are reset.
func MuxListener(ln net.Listener, max int) net.Listener {
	m := &muxListener{Listener: ln, max: max, streams: make(chan net.Conn), done: make(chan struct{})}
	go m.sessions()
	return m
}

func (m *muxListener) sessions() {
	for {
		c, err := m.Listener.Accept()
		if err != nil {
			m.close(err)
			return
		}
		s, err := yamux.Server(c, egressmux.Config())
		if err != nil {
			c.Close()
			continue
		}
		go m.accept(s)
	}
}

func (m *muxListener) accept(s *yamux.Session) {
	defer s.Close()
	for {
		for s.NumStreams() >= m.max {
			select {
			case <-s.CloseChan():
				return
			case <-m.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		st, err := s.Accept()
		if err != nil {
			return
		}
		select {
		case m.streams <- st:
		case <-m.done:
			st.Close()
			return
		}
	}
}

func (m *muxListener) close(err error) {
	m.once.Do(func() {
		m.err = err
		close(m.done)
	})
}

func (m *muxListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.streams:
		return c, nil
	case <-m.done:
		return nil, m.err
	}
}

func (m *muxListener) Close() error {
	err := m.Listener.Close()
	m.close(net.ErrClosed)
	return err
}
