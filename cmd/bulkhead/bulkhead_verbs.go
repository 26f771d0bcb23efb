package main

import (
	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// bulkheadCommands are bulkhead's own verbs, beyond runc's. Each lives in
// its own file (cmd_<verb>.go).
func bulkheadCommands(g *runtime.Globals) []*cli.Command {
	return []*cli.Command{
		checkCommand(g),
		seccompCommand(g),
		probeCommand(g),
		controlsCommand(g),
		doctorCommand(g),
		installCommand(g), uninstallCommand(g),
		diffCommand(g), changesCommand(g),
		inspectCommand(g),
		watchdogCommand(g),
		brokerCommand(g),
	}
}
