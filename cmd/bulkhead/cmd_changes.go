package main

import (
	"bufio"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// changesCommand is `bulkhead changes list|export|prune`: the workspace
// changes bulkhead keeps after a container's delete, for review.
func changesCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:         "changes",
		Usage:        "list, export or prune the workspace changes kept after delete",
		OnUsageError: usageError,
		Subcommands: []*cli.Command{
			{
				Name:         "list",
				Usage:        "list kept changes with their expiry",
				Flags:        []cli.Flag{&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"}},
				OnUsageError: usageError,
				Action: func(c *cli.Context) error {
					return runtime.ListKeptChanges(g, c.String("format"), os.Stdout)
				},
			},
			{
				Name:         "export",
				Usage:        "write a container's changes (kept, or live if it still runs)",
				ArgsUsage:    "ID",
				Flags:        []cli.Flag{&cli.StringFlag{Name: "format", Value: "patch", Usage: "patch, tar or json"}},
				OnUsageError: usageError,
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("changes export: want one container id, got %d arguments", c.NArg())
					}
					w := bufio.NewWriter(os.Stdout)
					rejected, err := runtime.ExportKeptChanges(g, c.Args().First(), c.String("format"), w)
					return finishExport(w, rejected, err)
				},
			},
			{
				Name:         "prune",
				Usage:        "remove expired changes, or those deleted longer ago than --older-than",
				Flags:        []cli.Flag{&cli.StringFlag{Name: "older-than", Usage: "a duration such as 1h; 0 removes all"}},
				OnUsageError: usageError,
				Action: func(c *cli.Context) error {
					older := time.Duration(-1)
					if v := c.String("older-than"); v != "" {
						d, err := time.ParseDuration(v)
						if err != nil && v != "0" {
							return fmt.Errorf("changes prune --older-than %q: want a duration such as 24h", v)
						}
						older = d
					}
					gone, err := runtime.PruneChangesCmd(g, older)
					for _, id := range gone {
						fmt.Println(id)
					}
					return err
				},
			},
		},
	}
}
