package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// detachedVerb is a hidden verb bulkhead re-executes itself as to leave a
// process beside a container (runtime/detach): the watchdog, the egress
// broker. All take one container id and the flags detach relies on:
// --spawn for the intermediate that detaches the process, --pid for the
// container's process it holds, --ready-fd for the pipe that hears "ok".
type detachedVerb struct {
	name  string
	usage string
	// pidUsage says what --pid names for this verb.
	pidUsage string
	// readyWhen says when the process writes "ok" to --ready-fd.
	readyWhen string
	// flags are the verb's own, listed between --pid and --ready-fd.
	flags []cli.Flag
	// spawn runs the intermediate; run the process itself, ready nil
	// without --ready-fd.
	spawn func(c *cli.Context, id string) error
	run   func(c *cli.Context, id string, ready *os.File) error
}

func (v detachedVerb) command() *cli.Command {
	flags := []cli.Flag{
		&cli.BoolFlag{Name: "spawn", Usage: "start the " + v.name + " detached and print its pid"},
		&cli.IntFlag{Name: "pid", Usage: v.pidUsage},
	}
	flags = append(flags, v.flags...)
	flags = append(flags, &cli.IntFlag{Name: "ready-fd", Value: -1, Usage: "descriptor that gets \"ok\" once " + v.readyWhen})
	return &cli.Command{
		Name:         v.name,
		Usage:        v.usage,
		ArgsUsage:    "ID",
		Hidden:       true,
		Flags:        flags,
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("%s: want exactly one container id, got %d arguments", v.name, c.NArg())
			}
			id := c.Args().First()
			if c.Bool("spawn") {
				return v.spawn(c, id)
			}
			var ready *os.File
			if fd := c.Int("ready-fd"); fd >= 0 {
				ready = os.NewFile(uintptr(fd), "ready")
			}
			return v.run(c, id, ready)
		},
	}
}
