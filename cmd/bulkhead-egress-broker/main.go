// Command bulkhead-egress-broker is a container's egress broker once it
// runs as the broker's user: an HTTP proxy to the profile's egress list.
// The root broker (bulkhead's broker verb) opens what needs root, drops
// to that user and executes it with those descriptors:
//
//	bulkhead-egress-broker --serve-fds SETTINGS,LISTENER,INIT,RECORD,AUDIT --ready-fd N ID
//
// It is a program of its own so that bulkhead, which engines start for
// every container, carries no HTTP.
package main

import (
	"flag"
	"fmt"
	"os"

	"bulkhead.dev/bulkhead/runtime/egress"
)

func main() {
	fs := flag.NewFlagSet("bulkhead-egress-broker", flag.ContinueOnError)
	serveFds := fs.String("serve-fds", "", "the descriptors the root broker hands over")
	readyFd := fs.Int("ready-fd", -1, "the descriptor to report readiness on")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *serveFds == "" || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "bulkhead-egress-broker: started by bulkhead's broker verb only: want --serve-fds and the container's id")
		os.Exit(2)
	}
	var ready *os.File
	if *readyFd >= 3 {
		ready = os.NewFile(uintptr(*readyFd), "ready")
	}
	if err := egress.ServeHandedOver(*serveFds, ready); err != nil {
		fmt.Fprintln(os.Stderr, "bulkhead-egress-broker:", err)
		os.Exit(1)
	}
}
