package main

import (
	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// bulkheadCommands are bulkhead's own verbs, beyond runc's.
func bulkheadCommands(g *runtime.Globals) []*cli.Command {
	return nil
}
