// Command bulkhead is an OCI runtime that engines call exactly as they
// call runc. It rewrites each container's spec to the policy's boundary,
// hands it to a backend (runc, runsc) and verifies what the kernel applied.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/runtime"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	runtime.ScrubEnvironment()
	os.Exit(run(os.Args))
}

func run(args []string) int {
	g := &runtime.Globals{Argv0: args[0]}
	err := parse(g, wiring{dispatch: dispatch, setupLog: runtime.SetupLog, ownVerbs: true}, args)
	var exit *runtime.ExitError
	var backend *runtime.BackendError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Status
	case errors.As(err, &backend):
		// The backend has said why on stderr and in the log already; its
		// status is ours. bulkhead's line comes last, as the one the
		// engine shows.
		runtime.LogError(err)
		return backend.Status
	default:
		runtime.LogError(err)
		return 1
	}
}

// dispatcher runs one parsed runc verb.
type dispatcher func(g *runtime.Globals, verb string, c *cli.Context) error

// wiring connects the parsed command line to what runs it. Tests give a
// dispatcher that only records, no log set-up and none of bulkhead's own
// verbs, so parsing can be tested without side effects.
type wiring struct {
	dispatch dispatcher
	setupLog func(*runtime.Globals) error
	ownVerbs bool
}

// parse parses args and runs the verb they name.
func parse(g *runtime.Globals, w wiring, args []string) error {
	var unknown string
	app := newApp(g, w)
	app.CommandNotFound = func(_ *cli.Context, verb string) { unknown = verb }
	if err := app.Run(flagsFirst(app, args)); err != nil {
		return err
	}
	if unknown != "" {
		return fmt.Errorf("unknown command %q; see bulkhead --help", unknown)
	}
	return nil
}

func newApp(g *runtime.Globals, w wiring) *cli.App {
	app := &cli.App{
		Name:                      "bulkhead",
		Usage:                     "an OCI runtime that enforces an execution boundary",
		Version:                   version,
		DisableSliceFlagSeparator: true,
		HideHelpCommand:           true,
		Flags:                     globalFlags(),
		Before: func(c *cli.Context) error {
			readGlobals(c, g)
			if w.setupLog != nil {
				return w.setupLog(g)
			}
			return nil
		},
		Commands:     commands(g, w),
		OnUsageError: usageError,
	}
	cli.VersionPrinter = func(c *cli.Context) {
		readGlobals(c, g)
		if err := runtime.Version(g, version, c.App.Writer); err != nil {
			fmt.Fprintln(os.Stderr, "bulkhead:", err)
		}
	}
	return app
}

// usageError keeps flag errors to one line on stderr: stdout is the
// backend's protocol, never bulkhead's help text.
func usageError(c *cli.Context, err error, _ bool) error {
	if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
		name = strings.TrimLeft(name, "-")
		for _, f := range runtime.GlobalFlags {
			if f.Name == name {
				verb := strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
				return fmt.Errorf("%s: %w; --%s is a global option: give it before the verb (bulkhead --%s VALUE %s ...)", verb, err, name, name, verb)
			}
		}
	}
	if verb := c.Command.FullName(); verb != "" && verb != c.App.Name {
		return fmt.Errorf("%s: %w", verb, err)
	}
	return err
}

// globalFlags are runtime.GlobalFlags as urfave flags.
func globalFlags() []cli.Flag {
	var out []cli.Flag
	for _, f := range runtime.GlobalFlags {
		c := cliFlags([]runtime.Flag{f.Flag})[0]
		if s, ok := c.(*cli.StringFlag); ok {
			s.EnvVars = f.EnvVars
		}
		out = append(out, c)
	}
	return out
}

func readGlobals(c *cli.Context, g *runtime.Globals) {
	g.Read(c)
}
