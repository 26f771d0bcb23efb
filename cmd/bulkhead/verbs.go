package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/runtime/backend"
)

// verbUsage is the one-line help of each runc verb.
var verbUsage = map[string]string{
	"create":     "create a container",
	"run":        "create, verify and start a container, and wait for it",
	"start":      "start the user process of a created container",
	"state":      "output the state of a container",
	"kill":       "send a signal to the container's init process",
	"delete":     "delete a container and everything bulkhead kept of it",
	"exec":       "run a policed process in a container",
	"ps":         "list the processes of a container",
	"events":     "display container events",
	"pause":      "suspend all processes of a container",
	"resume":     "resume all processes of a container",
	"update":     "update resource limits, clamped to the profile",
	"checkpoint": "checkpoint a running container",
	"restore":    "restore a container from a checkpoint",
	"list":       "list the containers of every backend",
	"spec":       "create a new specification file",
	"features":   "show the enabled features of the backend",
}

// commands builds one urfave command per runc verb from runtime.VerbFlags,
// the table that also decides what reaches the backend.
func commands(g *runtime.Globals, w wiring) []*cli.Command {
	var cmds []*cli.Command
	for _, verb := range sortedVerbs() {
		verb := verb
		cmds = append(cmds, &cli.Command{
			Name:         verb,
			Usage:        verbUsage[verb],
			Flags:        cliFlags(runtime.VerbFlags[verb]),
			OnUsageError: usageError,
			Action: func(c *cli.Context) error {
				return w.dispatch(g, verb, c)
			},
		})
	}
	if w.ownVerbs {
		cmds = append(cmds, bulkheadCommands(g)...)
	}
	return cmds
}

func dispatch(g *runtime.Globals, verb string, c *cli.Context) error {
	args := c.Args().Slice()
	id := c.Args().First()
	if err := backend.KeepOthersFromBackends(c.Int("preserve-fds")); err != nil {
		return fmt.Errorf("%s: the caller's descriptors: %w", verb, err)
	}
	switch verb {
	case "create", "run", "restore", "delete", "update", "start":
		// What the backend gets is bulkhead's own reading of the command
		// line: another shape of it (start -- -- ID) would reach the
		// backend's verb past bulkhead's.
		if c.NArg() != 1 {
			return fmt.Errorf("%s: want exactly one container id, got %d arguments", verb, c.NArg())
		}
	}
	switch verb {
	case "create":
		return runtime.Create(g, c, id)
	case "run":
		return runtime.Run(g, c, id)
	case "restore":
		return runtime.Restore(g, c, id)
	case "delete":
		return runtime.Delete(g, c, id)
	case "exec":
		return runtime.Exec(g, c, args)
	case "start":
		return runtime.Start(g, c, id)
	case "update":
		return runtime.Update(g, c, id)
	case "state":
		return runtime.State(g, c, args, os.Stdout)
	case "list":
		return runtime.List(g, c, os.Stdout)
	case "features":
		return runtime.Features(g, os.Stdout)
	case "kill":
		return runtime.Kill(g, c, args)
	case "ps":
		return runtime.Ps(g, c, args, os.Stdout)
	default:
		return runtime.Passthrough(g, verb, c, args)
	}
}

func sortedVerbs() []string {
	return slices.Sorted(maps.Keys(runtime.VerbFlags))
}

func cliFlags(flags []runtime.Flag) []cli.Flag {
	out := make([]cli.Flag, 0, len(flags))
	for _, f := range flags {
		switch f.Kind {
		case runtime.Bool:
			out = append(out, &cli.BoolFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage})
		case runtime.String:
			out = append(out, &cli.StringFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Value: f.Default})
		case runtime.Int:
			out = append(out, &cli.IntFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Value: defaultInt(f.Default)})
		case runtime.StringSlice:
			out = append(out, &cli.StringSliceFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage})
		case runtime.Duration:
			d, _ := time.ParseDuration(f.Default)
			out = append(out, &cli.DurationFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Value: d})
		}
	}
	return out
}

func defaultInt(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
