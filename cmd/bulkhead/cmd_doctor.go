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
	"bulkhead.dev/bulkhead/runtime/doctor"
)

// doctorCommand is `bulkhead doctor`: whether this host can hold the
// boundary, one line per check. It exits 0 when no check fails (warnings
// included) and 1 when one does.
func doctorCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check that this host and its backends can hold the boundary (exit 0: no check failed, 1: one did)",
		Description: "Checks the configuration file, each configured backend (found, runs, version, runc's known\n" +
			"container escapes judged per release branch and against the distribution's changelog), seccomp,\n" +
			"cgroup controllers, overlayfs, idmapped mounts, pidfd, user namespaces, CAP_SYS_RESOURCE, the\n" +
			"state, audit and changes directories, the engines' registrations, and creates one throwaway\n" +
			"container per backend through bulkhead's own create and verification.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output: text (one line per check) or json"},
			&cli.StringFlag{Name: "backend", Usage: "check only this configured backend (default: every configured backend)"},
		},
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("doctor: takes no arguments, got %q", strings.Join(c.Args().Slice(), " "))
			}
			format := c.String("format")
			if format != "text" && format != "json" {
				return fmt.Errorf("doctor --format %q: want text or json", format)
			}
			// An interrupted live check still removes its container.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			rep := runtime.Doctor(ctx, g, doctor.Options{Backend: c.String("backend"), Live: true})
			var err error
			if format == "json" {
				err = rep.WriteJSON(c.App.Writer)
			} else {
				err = rep.WriteText(c.App.Writer)
			}
			if err != nil {
				return err
			}
			return rep.Err()
		},
	}
}
