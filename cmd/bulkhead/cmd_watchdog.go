package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// watchdogCommand is the hidden verb bulkhead re-executes itself as to
// enforce a container's max_lifetime from outside the sandbox.
func watchdogCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:      runtime.WatchdogVerb,
		Usage:     "internal: enforce a container's max_lifetime",
		ArgsUsage: "ID",
		Hidden:    true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "spawn", Usage: "start the watchdog detached and print its pid"},
			&cli.IntFlag{Name: "pid", Usage: "the container's init (or gVisor sandbox) pid"},
			&cli.DurationFlag{Name: "lifetime", Usage: "time the container may run after start"},
			&cli.IntFlag{Name: "ready-fd", Value: -1, Usage: "descriptor that gets \"ok\" once the init is watched"},
		},
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("watchdog: want exactly one container id, got %d arguments", c.NArg())
			}
			id := c.Args().First()
			if c.Bool("spawn") {
				return runtime.SpawnWatchdog(g, id, c.Int("pid"), c.Duration("lifetime"))
			}
			var ready *os.File
			if fd := c.Int("ready-fd"); fd >= 0 {
				ready = os.NewFile(uintptr(fd), "ready")
			}
			return runtime.Watchdog(g, id, c.Int("pid"), c.Duration("lifetime"), ready)
		},
	}
}
