package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// probeCommand is `bulkhead probe`: run the boundary probe in a throwaway
// container through bulkhead's own create path and show, control by
// control, what the kernel answered and which layer answered it. It exits
// non-zero unless every control held.
func probeCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:  "probe",
		Usage: "attempt every boundary from inside a throwaway container and report which layer stopped it",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "backend", Usage: "backend to probe: runc or runsc (default: the profile's)"},
			&cli.StringFlag{Name: "profile", Usage: "profile to probe (default: the configuration's default_profile)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output: text (a table) or json"},
			&cli.DurationFlag{Name: "timeout", Value: 0, Usage: "bound for the whole probe (default 2m)"},
		},
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("probe: takes no arguments, got %q", strings.Join(c.Args().Slice(), " "))
			}
			format := c.String("format")
			if format != "text" && format != "json" {
				return fmt.Errorf("probe --format %q: want text or json", format)
			}
			// An interrupted probe still removes its container.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			opt := runtime.ProbeOptions{Profile: c.String("profile"), Backend: c.String("backend"), Timeout: c.Duration("timeout")}
			rep, err := runtime.Probe(ctx, g, opt)
			if rep == nil {
				return err
			}
			if format == "json" {
				if werr := rep.WriteJSON(os.Stdout); werr != nil {
					return werr
				}
			} else if werr := rep.WriteText(os.Stdout); werr != nil {
				return werr
			}
			if err != nil {
				return err
			}
			if !rep.Pass {
				return fmt.Errorf("probe: controls that did not hold on %s with profile %s: %s", rep.Backend, rep.Profile, strings.Join(rep.Failed(), ", "))
			}
			return nil
		},
	}
}
