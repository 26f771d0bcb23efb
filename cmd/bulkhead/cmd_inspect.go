package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// inspectCommand is `bulkhead inspect`: what bulkhead knows of one
// container, for people (state stays runc's, for engines).
func inspectCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "show a container's profile, backend, decisions, verification and deadline",
		ArgsUsage: "ID",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output: text or json"},
		},
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("inspect: want exactly one container id, got %d arguments", c.NArg())
			}
			format := c.String("format")
			if format != "text" && format != "json" {
				return fmt.Errorf("inspect --format %q: want text or json", format)
			}
			in, err := runtime.Inspect(g, c.Args().First())
			if err != nil {
				return err
			}
			if format == "json" {
				return in.WriteJSON(os.Stdout)
			}
			return in.WriteText(os.Stdout)
		},
	}
}
