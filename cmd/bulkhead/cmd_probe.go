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
	"bulkhead.dev/bulkhead/runtime/probe"
)

// probeCommand is `bulkhead probe`: run the boundary probe in a throwaway
// container through bulkhead's own create path and show, control by
// control, what the kernel answered and which layer answered it. It exits
// non-zero unless every control held: a control that failed, or one that
// should have run and was skipped.
func probeCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:  "probe",
		Usage: "attempt every boundary from inside a throwaway container and report which layer stopped it",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "backend", Usage: "backend to probe: runc or runsc (default: the profile's)"},
			&cli.StringFlag{Name: "profile", Usage: "profile to probe (default: the configuration's default_profile)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output: text (a table) or json"},
			&cli.StringFlag{Name: "egress-target", Usage: "host:port of the profile's egress list that the egress control tries through the broker (default: the first entry naming one host)"},
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
			opt := runtime.ProbeOptions{Profile: c.String("profile"), Backend: c.String("backend"), Timeout: c.Duration("timeout"), EgressTarget: c.String("egress-target")}
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
			return probeVerdict(rep)
		},
	}
}

// probeVerdict is the exit of `bulkhead probe`: nil only when every
// control ran and held. A skipped control is no evidence, so it fails the
// run as much as a failed one.
func probeVerdict(rep *probe.Report) error {
	var why []string
	if f := rep.Failed(); len(f) > 0 {
		why = append(why, "controls that did not hold: "+strings.Join(f, ", "))
	}
	if s := rep.Skipped(); len(s) > 0 {
		why = append(why, "controls that were skipped: "+strings.Join(s, ", "))
	}
	if !rep.Finished {
		why = append(why, "the probe did not finish")
	}
	if len(why) == 0 && !rep.Pass {
		why = append(why, "the report does not pass")
	}
	if len(why) > 0 {
		return fmt.Errorf("probe on %s with profile %s: %s", rep.Backend, rep.Profile, strings.Join(why, "; "))
	}
	return nil
}
