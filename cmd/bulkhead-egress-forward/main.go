// Command bulkhead-egress-forward is the egress broker's address inside a
// gVisor sandbox. runsc with --network=none gives the sandbox a loopback
// of its own, in gVisor's netstack, that no host socket can listen on.
// HTTP clients take a proxy as http://host:port only, so this program
// listens on that address and carries each connection, byte for byte, as
// a stream multiplexed over its standard input: a connection to the
// broker that bulkhead made on the host and runsc exec donated. The
// policy is the broker's, outside: the program holds nothing the job
// could use, so a job that kills or replaces it gains nothing.
//
//	bulkhead-egress-forward --serve <listen host:port>
//	bulkhead-egress-forward --check <host:port>
//	bulkhead-egress-forward --await <host:port> -- <program> [args...]
//
// With --check it asks the proxy at host:port for a tunnel to a name no
// profile lists and prints the answer's first lines, so that bulkhead can
// see the broker answer from inside the sandbox. With --await it is the
// container's init: it waits until host:port accepts a connection (the
// forwarder, which runsc can start only after the init), then executes
// the program in its own place. It writes nothing on
// stdout otherwise. The binary must be static (CGO_ENABLED=0): it runs in
// the container's root filesystem.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"

	"bulkhead.dev/bulkhead/runtime/egressmux"
)

// CheckDestination is the tunnel --check asks for.
const CheckDestination = "bulkhead-check.invalid:1"

func main() {
	switch {
	case len(os.Args) == 3 && os.Args[1] == "--check":
		if err := check(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "bulkhead-egress-forward:", err)
			os.Exit(1)
		}
	case len(os.Args) >= 5 && os.Args[1] == "--await" && os.Args[3] == "--":
		// await returns only on failure.
		fmt.Fprintln(os.Stderr, "bulkhead-egress-forward:", await(os.Args[2], os.Args[4:]))
		os.Exit(125)
	case len(os.Args) == 3 && os.Args[1] == "--serve":
		// serve returns when the listener or the broker's stream ends.
		fmt.Fprintln(os.Stderr, "bulkhead-egress-forward:", serve(os.Args[2], os.Stdin))
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "usage: bulkhead-egress-forward --serve <listen host:port> | --check <host:port> | --await <host:port> -- <program> [args...]")
		os.Exit(2)
	}
}

func serve(addr string, broker io.ReadWriteCloser) error {
	session, err := yamux.Client(broker, egressmux.Config())
	if err != nil {
		return err
	}
	defer session.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// No broker, no proxy: the job's clients then see refused
	// connections rather than ones that hang.
	go func() {
		<-session.CloseChan()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if session.IsClosed() {
				return fmt.Errorf("the broker's stream ended")
			}
			return err
		}
		go forward(c.(*net.TCPConn), session)
	}
}

// forward carries one connection as a stream and back, half-closing each
// way as its side ends, so a CONNECT tunnel's shutdown reaches the
// destination. A connection that sends nothing (the init's --await) opens
// no stream, and so is no connection of the job's in the broker's audit.
func forward(c *net.TCPConn, session *yamux.Session) {
	defer c.Close()
	in := bufio.NewReader(c)
	if _, err := in.Peek(1); err != nil {
		return
	}
	s, err := session.Open()
	if err != nil {
		return
	}
	defer s.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(s, in)
		_ = s.Close() // yamux's close is a half-close: the answer still comes
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(c, s)
		_ = c.CloseWrite()
	}()
	wg.Wait()
}

// check prints the status line and body of the proxy's answer to a
// CONNECT for CheckDestination.
func check(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c, "CONNECT %[1]s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", CheckDestination); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(bufio.NewReader(c), 4096))
	if len(data) == 0 && err != nil {
		return err
	}
	_, err = os.Stdout.Write(data)
	return err
}

// awaitBound is how long the init waits for the forwarder: start runs it
// at once and kills the container when the broker does not answer through
// it, so the bound only ends an init whose start never came.
const awaitBound = 10 * time.Minute

// await waits until addr accepts, closes that connection unused, and
// executes argv as the container's runtime would: argv[0] looked up in
// the process's PATH.
func await(addr string, argv []string) error {
	for deadline := time.Now().Add(awaitBound); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the egress proxy at %s did not come up in %v: %v", addr, awaitBound, err)
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}
