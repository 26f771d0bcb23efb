package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// watchdogCommand is the hidden verb bulkhead re-executes itself as to
// enforce a container's max_lifetime from outside the sandbox.
func watchdogCommand(g *runtime.Globals) *cli.Command {
	return detachedVerb{
		name:      runtime.WatchdogVerb,
		usage:     "internal: enforce a container's max_lifetime",
		pidUsage:  "the container's init (or gVisor sandbox) pid",
		readyWhen: "the init is watched",
		flags: []cli.Flag{
			&cli.DurationFlag{Name: "lifetime", Usage: "time the container may run after start"},
			&cli.StringFlag{Name: "created", Usage: "creation time of the container's record (RFC 3339); the watchdog acts only while the record under the id is that one"},
		},
		spawn: func(c *cli.Context, id string) error {
			return runtime.SpawnWatchdog(g, id, c.Int("pid"), c.Duration("lifetime"), c.String("created"))
		},
		run: func(c *cli.Context, id string, ready *os.File) error {
			return runtime.Watchdog(g, id, c.Int("pid"), c.Duration("lifetime"), c.String("created"), ready)
		},
	}.command()
}
