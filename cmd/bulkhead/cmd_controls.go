package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/specs"
)

// controlsCommand prints bulkhead's table of controls: what each enforces,
// which layer denies an attempt, what is verified from the host and what
// the probe attempts. The README's table is this command's markdown.
func controlsCommand(_ *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:         "controls",
		Usage:        "print the table of controls of the default profile",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, markdown or json"},
			&cli.BoolFlag{Name: "fields", Usage: "print the class of every runtime-spec field instead"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("fields") {
				return printFields(c.App.Writer, c.String("format"))
			}
			return printControls(c.App.Writer, c.String("format"))
		},
	}
}

func printControls(w io.Writer, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(specs.Controls)
	case "markdown":
		_, err := io.WriteString(w, controlsMarkdown())
		return err
	case "text":
		for _, c := range specs.Controls {
			fmt.Fprintf(w, "%s\n  default:  %s\n  layer:    %s\n  verified: %s\n  probe:    %s\n",
				c.Name, c.Default, c.Layer, orNone(c.Verified, "by the probe only"), orNone(c.Probe, "-"))
		}
		return nil
	default:
		return fmt.Errorf("controls --format %q: want text, markdown or json", format)
	}
}

func controlsMarkdown() string {
	var b strings.Builder
	b.WriteString("| control | default | layer that denies an attempt | verified from the host | probe attempts |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, c := range specs.Controls {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c.Name, c.Default, c.Layer,
			orNone(c.Verified, "—"), orNone(c.Probe, "—"))
	}
	return b.String()
}

func orNone(list []string, none string) string {
	if len(list) == 0 {
		return none
	}
	return strings.Join(list, ", ")
}

// printFields prints the classification of every runtime-spec field
// (specs.Fields): what the policy does with a value the caller set there.
// docs/fields.md is its markdown.
func printFields(w io.Writer, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(specs.Fields)
	case "markdown":
		_, err := io.WriteString(w, fieldsMarkdown())
		return err
	case "text":
		for _, f := range specs.Fields {
			fmt.Fprintf(w, "%-55s %-11s %-16s %s\n", f.Path, f.Class, f.Rule, f.Why)
		}
		return nil
	default:
		return fmt.Errorf("controls --format %q: want text, markdown or json", format)
	}
}

func fieldsMarkdown() string {
	var b strings.Builder
	b.WriteString("| field | class | rule | why |\n|---|---|---|---|\n")
	for _, f := range specs.Fields {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Path, f.Class, f.Rule, f.Why)
	}
	return b.String()
}
