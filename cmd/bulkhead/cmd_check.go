package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// checkCommand is `bulkhead check`: create's policy without the container.
// It prints the decisions and the diff of the spec and exits non-zero when
// create would refuse. It is validation, not containment, and says so.
func checkCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "dry run of create: print the policy's decisions and the rewritten spec's diff (validation, not containment)",
		ArgsUsage: "[CONFIG.json]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bundle", Aliases: []string{"b"}, Usage: "bundle directory (default: the current directory)"},
			&cli.StringFlag{Name: "profile", Usage: "profile to check against (default: as create would select)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output: text or json"},
			&cli.StringFlag{Name: "id", Usage: "the container id create would be given: its cgroups path and state directory follow from it (default: " + runtime.PlaceholderID + ")"},
		},
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return fmt.Errorf("check: want at most one config.json, got %d arguments", c.NArg())
			}
			format := c.String("format")
			if format != "text" && format != "json" {
				return fmt.Errorf("check --format %q: want text or json", format)
			}
			if p := c.String("profile"); p != "" {
				g.Profile = p
			}
			specPath, bundle, err := runtime.CheckTarget(c.String("bundle"), c.Args().First())
			if err != nil {
				return err
			}
			r, err := runtime.DryRun(g, specPath, bundle, c.String("id"))
			if err != nil {
				return err
			}
			if format == "json" {
				err = r.WriteJSON(os.Stdout)
			} else {
				err = r.WriteText(os.Stdout)
			}
			if err != nil {
				return err
			}
			if !r.Runs {
				why := strings.Join(r.RefusedRules(), ", ")
				if why == "" {
					why = "the backend's validation"
				}
				return fmt.Errorf("check: profile %s would refuse this container (%s)", r.Profile, why)
			}
			return nil
		},
	}
}
