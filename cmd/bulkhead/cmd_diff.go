package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/runtime/escape"
)

// diffCommand is `bulkhead diff ID`: what a live container changed in its
// overlay workspaces, read from the upper layer on the host side.
func diffCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "show a live container's workspace changes (added, modified, deleted) as a git patch, a tar of the upper layer or json",
		ArgsUsage: "ID",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "patch", Usage: "output: patch (git apply), tar (OCI layer of the upper layer) or json (paths, sizes, sha256)"},
		},
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("diff: want one container id, got %d arguments", c.NArg())
			}
			w := bufio.NewWriter(os.Stdout)
			rejected, err := runtime.DiffChanges(g, c.Args().First(), c.String("format"), w)
			return finishExport(w, rejected, err)
		},
	}
}

// finishExport flushes the export and names on stderr every path it left
// out, so a reviewer never mistakes a partial patch for the whole change.
func finishExport(w *bufio.Writer, rejected []string, err error) error {
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	for _, r := range rejected {
		fmt.Fprintf(os.Stderr, "bulkhead: not exported: %s\n", r)
	}
	if err != nil {
		return errors.New(escape.Text(err.Error()))
	}
	return nil
}
