package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// brokerCommand is the hidden verb bulkhead re-executes itself as to run
// a container's egress broker outside the sandbox.
func brokerCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:      runtime.BrokerVerb,
		Usage:     "internal: proxy a container's HTTP to its profile's egress list",
		ArgsUsage: "ID",
		Hidden:    true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "spawn", Usage: "start the broker detached and print its pid"},
			&cli.IntFlag{Name: "pid", Usage: "the container's init pid, whose network namespace the broker listens in"},
			&cli.StringFlag{Name: "socket", Usage: "listen on this unix socket (runsc) instead of in the container's network namespace"},
			&cli.StringFlag{Name: "serve-fds", Usage: "descriptors the root broker hands to the unprivileged one"},
			&cli.IntFlag{Name: "ready-fd", Value: -1, Usage: "descriptor that gets \"ok\" once the broker listens"},
		},
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("broker: want exactly one container id, got %d arguments", c.NArg())
			}
			id := c.Args().First()
			if c.Bool("spawn") {
				return runtime.SpawnBroker(g, id, c.Int("pid"), c.String("socket"))
			}
			var ready *os.File
			if fd := c.Int("ready-fd"); fd >= 0 {
				ready = os.NewFile(uintptr(fd), "ready")
			}
			if fds := c.String("serve-fds"); fds != "" {
				return runtime.ServeBroker(fds, ready)
			}
			return runtime.RunBroker(g, id, c.Int("pid"), c.String("socket"), ready)
		},
	}
}
