package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/install"
	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/runtime/doctor"
	"bulkhead.dev/bulkhead/specs"
)

// installCommand registers bulkhead with a container engine:
// `bulkhead install docker` edits daemon.json, `bulkhead install
// containerd` config.toml.
func installCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:            "install",
		Usage:           "register bulkhead as a runtime of a container engine",
		HideHelpCommand: true,
		OnUsageError:    usageError,
		Subcommands: []*cli.Command{{
			Name:  "docker",
			Usage: "add runtimes.bulkhead (and bulkhead-runsc) to dockerd's daemon.json",
			Description: "Adds {\"path\": <this binary>} as runtimes.NAME, and NAME-runsc pointing at the\n" +
				"bulkhead-runsc symlink when runsc is installed, keeping every other key in its order.\n" +
				"The file as it was is kept as daemon.json" + install.BackupSuffix + ". Running it again changes\n" +
				"nothing. Default file: /etc/docker/daemon.json, or for rootless Docker (a non-root user)\n" +
				"$XDG_CONFIG_HOME/docker/daemon.json (~/.config/docker/daemon.json).\n" +
				"bulkhead doctor runs first; on a node where a check fails nothing is registered unless --force.",
			Flags:        dockerFlags(true),
			OnUsageError: usageError,
			Action: func(c *cli.Context) error {
				return installDocker(c, g, c.App.Writer)
			},
		}, installContainerdCommand(g)},
	}
}

// uninstallCommand removes exactly what install added.
func uninstallCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:            "uninstall",
		Usage:           "remove bulkhead's registration from a container engine",
		HideHelpCommand: true,
		OnUsageError:    usageError,
		Subcommands: []*cli.Command{{
			Name:         "docker",
			Usage:        "remove runtimes.bulkhead, bulkhead-runsc and a default-runtime naming them from daemon.json",
			Flags:        dockerFlags(false),
			OnUsageError: usageError,
			Action: func(c *cli.Context) error {
				return uninstallDocker(c, c.App.Writer)
			},
		}, uninstallContainerdCommand()},
	}
}

func dockerFlags(withDefault bool) []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "daemon.json to edit (default: " + install.DockerConfigPath() + ")"},
		&cli.StringFlag{Name: "name", Value: "bulkhead", Usage: "runtime name for docker run --runtime=NAME; gVisor is NAME-runsc"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the change and the resulting file; write nothing"},
	}
	if withDefault {
		flags = append(flags, &cli.BoolFlag{Name: "default", Usage: "also make NAME dockerd's default-runtime"}, forceFlag)
	}
	return flags
}

// dockerTarget builds the registration from the flags and this binary.
func dockerTarget(c *cli.Context) (*install.Docker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil, err
	}
	if err := registrable(exe); err != nil {
		return nil, err
	}
	d := &install.Docker{
		Config:  c.String("config"),
		Name:    c.String("name"),
		Binary:  exe,
		Default: c.Bool("default"),
		DryRun:  c.Bool("dry-run"),
	}
	if d.Config == "" {
		d.Config = install.DockerConfigPath()
	}
	if d.Config, err = filepath.Abs(d.Config); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("runsc"); err == nil {
		d.Runsc = filepath.Join(filepath.Dir(exe), "bulkhead-runsc")
	}
	return d, nil
}

func installDocker(c *cli.Context, g *runtime.Globals, out io.Writer) error {
	d, err := dockerTarget(c)
	if err != nil {
		return err
	}
	if err := doctorGate(g, c.Bool("force"), d.DryRun, out); err != nil {
		return err
	}
	var linked bool
	if d.Runsc != "" && !d.DryRun {
		if linked, err = ensureRunscLink(d.Runsc, filepath.Base(d.Binary)); err != nil {
			fmt.Fprintf(out, "note: runsc is installed but %s cannot be created (%v): no %s-runsc entry\n", d.Runsc, err, d.Name)
			d.Runsc = ""
		}
	}
	if d.Runsc != "" {
		if err := registrable(d.Runsc); err != nil {
			return err
		}
	}
	res, err := d.Install()
	if err != nil {
		return fmt.Errorf("install docker: %w", err)
	}
	if linked {
		fmt.Fprintf(out, "created symlink %s -> %s (the name selects gVisor)\n", d.Runsc, filepath.Base(d.Binary))
	}
	report(out, res, d.DryRun)
	if len(res.Changes) == 0 {
		fmt.Fprintf(out, "%s already registers bulkhead; nothing to do\n", res.Path)
	}
	fmt.Fprintf(out, "\napply: dockerd rereads runtimes on SIGHUP:\n  kill -HUP $(pidof dockerd)    # or: systemctl reload docker\n")
	if d.Default {
		fmt.Fprintf(out, "  default-runtime=%s: every container without --runtime now gets bulkhead's boundary\n", d.Name)
	}
	fmt.Fprintf(out, "use:   docker run --runtime=%s IMAGE ...", d.Name)
	if d.Runsc != "" {
		fmt.Fprintf(out, "    (gVisor: --runtime=%s-runsc)", d.Name)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "undo:  bulkhead uninstall docker --config %s --name %s\n", res.Path, d.Name)
	if g.Config != "" && filepath.Clean(g.Config) != runtime.DefaultConfigPath {
		// The entries run bulkhead as dockerd calls it, which reads the
		// default file: the one this run was checked with is not theirs.
		fmt.Fprintf(out, "note:  the runtime reads %s, not %s, which this run used: copy it there, or add \"runtimeArgs\": [\"--config\", %q] to the entries\n",
			runtime.DefaultConfigPath, g.Config, g.Config)
	}
	return nil
}

func uninstallDocker(c *cli.Context, out io.Writer) error {
	d, err := dockerTarget(c)
	if err != nil {
		return err
	}
	res, err := d.Uninstall()
	if err != nil {
		return fmt.Errorf("uninstall docker: %w", err)
	}
	report(out, res, d.DryRun)
	if len(res.Changes) == 0 {
		fmt.Fprintf(out, "%s has no bulkhead runtime named %s; nothing to do\n", res.Path, d.Name)
		return nil
	}
	if removedDefault(res) {
		// dockerd keeps a reloaded default-runtime whose key disappeared
		// from the file; 20.10 then dereferences the runtime it no longer
		// has and crashes (measured: nil pointer in fillPlatformInfo).
		fmt.Fprintf(out, "\napply: restart dockerd (systemctl restart docker): default-runtime was removed, and on\n"+
			"       SIGHUP dockerd keeps a default whose key is gone, so it would still point at %s\n", d.Name)
	} else {
		fmt.Fprintf(out, "\napply: kill -HUP $(pidof dockerd)    # or: systemctl reload docker\n")
	}
	fmt.Fprintf(out, "       containers already running under %s keep running until they are removed\n", d.Name)
	return nil
}

func removedDefault(res *install.Result) bool {
	for _, c := range res.Changes {
		if c.Key == "default-runtime" && c.Action == "removed" {
			return true
		}
	}
	return false
}

// report prints what changed, where, and with --dry-run the file that
// would be written.
func report(out io.Writer, res *install.Result, dryRun bool) {
	verb := ""
	if dryRun {
		verb = " (dry run: nothing written)"
	}
	if len(res.Changes) > 0 {
		fmt.Fprintf(out, "%s%s:\n", res.Path, verb)
	}
	for _, ch := range res.Changes {
		fmt.Fprintf(out, "  %s\n", ch)
	}
	switch {
	case res.Removed:
		fmt.Fprintf(out, "  removed the file: bulkhead install had created it\n")
	case res.Backup != "":
		fmt.Fprintf(out, "  previous version kept as %s\n", res.Backup)
	}
	if dryRun && len(res.Changes) > 0 && res.After != nil {
		fmt.Fprintf(out, "resulting %s:\n%s", res.Path, res.After)
	}
}

// forceFlag lets install register bulkhead on a node doctor fails.
var forceFlag = &cli.BoolFlag{Name: "force", Usage: "register even when bulkhead doctor finds a check that fails on this node"}

// doctorGate runs bulkhead doctor before a registration and refuses on a
// node where a check fails: every job the engine then sent to bulkhead
// would get a weaker boundary than the policy promises (a runc with a
// known escape, a controller whose limit cannot be applied). --force
// registers anyway, after printing the same verdicts; a dry run says it
// would refuse and goes on, since it writes nothing.
func doctorGate(g *runtime.Globals, force, dryRun bool, out io.Writer) error {
	fmt.Fprintln(out, "bulkhead doctor:")
	rep := runtime.Doctor(context.Background(), g, doctor.Options{Live: true})
	if err := rep.WriteText(out); err != nil {
		return err
	}
	fmt.Fprintln(out)
	err := rep.Err()
	switch {
	case err == nil:
		return nil
	case force:
		fmt.Fprintf(out, "--force: registering although %d checks fail on this node (marked fail above)\n\n", len(rep.Failed()))
		return nil
	case dryRun:
		fmt.Fprintf(out, "dry run: without --force, install would refuse this node (%d checks fail, marked above)\n\n", len(rep.Failed()))
		return nil
	}
	return fmt.Errorf("refusing to register bulkhead on this node: %w; fix the checks marked fail above, or pass --force to register anyway", err)
}

// ensureRunscLink makes the bulkhead-runsc symlink next to the binary if it
// is missing (`make install` makes it too); the name selects gVisor.
func ensureRunscLink(path, target string) (created bool, err error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	}
	if err := os.Symlink(target, path); err != nil {
		return false, err
	}
	return true, nil
}

// registrable refuses to register a bulkhead binary, exe, that others
// than root could change or replace: the engine would run it as root for
// every container, with the boundary in its hands. bulkhead-runsc, a
// link to it, is judged so too, every link of its way included.
func registrable(exe string) error {
	_, why, err := specs.RootFile(exe)
	if err != nil {
		return err
	}
	if why != "" {
		return fmt.Errorf("%s can be changed by others than root, and the engine would run %s as root for every container; install bulkhead where only root may change it (make install puts it in /usr/local/bin)", why, exe)
	}
	return nil
}
