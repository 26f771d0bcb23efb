package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// brokerCommand is the hidden verb bulkhead re-executes itself as to run
// a container's egress broker outside the sandbox.
func brokerCommand(g *runtime.Globals) *cli.Command {
	return detachedVerb{
		name:      runtime.BrokerVerb,
		usage:     "internal: proxy a container's HTTP to its profile's egress list",
		pidUsage:  "the container's init pid, whose network namespace the broker listens in",
		readyWhen: "the broker listens",
		flags: []cli.Flag{
			&cli.StringFlag{Name: "socket", Usage: "listen on this unix socket (runsc) instead of in the container's network namespace"},
		},
		spawn: func(c *cli.Context, id string) error {
			return runtime.SpawnBroker(g, id, c.Int("pid"), c.String("socket"))
		},
		run: func(c *cli.Context, id string, ready *os.File) error {
			return runtime.RunBroker(g, id, c.Int("pid"), c.String("socket"), ready)
		},
	}.command()
}
