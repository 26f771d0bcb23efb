package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	"github.com/urfave/cli/v2"

	"bulkhead.dev/bulkhead/install"
	"bulkhead.dev/bulkhead/runtime"
)

// shimName is bulkhead's containerd shim, which containerd looks up on its
// PATH for runtime_type io.containerd.bulkhead.v2.
const shimName = "containerd-shim-bulkhead-v2"

func installContainerdCommand(g *runtime.Globals) *cli.Command {
	return &cli.Command{
		Name:  "containerd",
		Usage: "add runtime handler bulkhead to containerd's CRI config.toml",
		Description: "Adds plugins.<CRI>.containerd.runtimes.NAME with runtime_type = \"" + install.ShimRuntimeType + "\" and no\n" +
			"options (containerd-shim-bulkhead-v2 finds bulkhead next to itself, then on PATH), and removes\n" +
			"the NAME-runsc handler an earlier bulkhead wrote: a gVisor pod's containers start only through\n" +
			"gVisor's own shim. When runsc is installed, the bulkhead-runsc symlink is made next to this\n" +
			"binary (ctr --runtime io.containerd.bulkhead-runsc.v2). <CRI> is io.containerd.grpc.v1.cri in\n" +
			"a version 2 config (containerd 1.x) and io.containerd.cri.v1.runtime in a version 3 config\n" +
			"(containerd 2.x). The handler goes in a marked block at the end; the rest of the file keeps\n" +
			"its bytes. The file as it was is kept as\n" +
			"config.toml" + install.BackupSuffix + ". Running it again changes nothing.\n" +
			"bulkhead doctor runs first; on a node where a check fails nothing is registered unless --force.",
		Flags:        append(containerdFlags(), forceFlag),
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			return installContainerd(c, g, c.App.Writer)
		},
	}
}

func uninstallContainerdCommand() *cli.Command {
	return &cli.Command{
		Name:         "containerd",
		Usage:        "remove runtime handler bulkhead (and an earlier install's bulkhead-runsc) from containerd's config.toml",
		Flags:        containerdFlags(),
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			return uninstallContainerd(c, c.App.Writer)
		},
	}
}

func containerdFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Value: install.DefaultContainerdConfig, Usage: "config.toml to edit"},
		&cli.StringFlag{Name: "name", Value: "bulkhead", Usage: "runtime handler name (RuntimeClass handler, crictl --runtime)"},
		&cli.IntFlag{Name: "config-version", Usage: "config version for a new file: 2 (containerd 1.x) or 3 (2.x); default: from `containerd --version`"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the change and the resulting file; write nothing"},
	}
}

func containerdTarget(c *cli.Context) (*install.Containerd, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil, "", err
	}
	if err := registrable(exe); err != nil {
		return nil, "", err
	}
	t := &install.Containerd{
		Config:  c.String("config"),
		Name:    c.String("name"),
		Version: int64(c.Int("config-version")),
		DryRun:  c.Bool("dry-run"),
	}
	if t.Config, err = filepath.Abs(t.Config); err != nil {
		return nil, "", err
	}
	if t.Version == 0 {
		t.Version = containerdConfigVersion()
	}
	return t, exe, nil
}

// containerdConfigVersion is 3 when the installed containerd is 2.x, else 2.
func containerdConfigVersion() int64 {
	out, err := exec.Command("containerd", "--version").Output()
	if err != nil {
		return 2
	}
	if m := regexp.MustCompile(`\sv?(\d+)\.\d+`).FindSubmatch(out); m != nil && string(m[1]) >= "2" {
		return 3
	}
	return 2
}

func installContainerd(c *cli.Context, g *runtime.Globals, out io.Writer) error {
	t, exe, err := containerdTarget(c)
	if err != nil {
		return err
	}
	if err := doctorGate(g, c.Bool("force"), t.DryRun, out); err != nil {
		return err
	}
	runsc := ""
	if _, err := exec.LookPath("runsc"); err == nil {
		runsc = filepath.Join(filepath.Dir(exe), "bulkhead-runsc")
	}
	var linked bool
	if runsc != "" && !t.DryRun {
		if linked, err = ensureRunscLink(runsc, filepath.Base(exe)); err != nil {
			fmt.Fprintf(out, "note: runsc is installed but %s cannot be created (%v)\n", runsc, err)
			runsc = ""
		}
	}
	if runsc != "" {
		// ctr's io.containerd.bulkhead-runsc.v2 runs it as root.
		if err := registrable(runsc); err != nil {
			return err
		}
	}
	res, err := t.Install()
	if err != nil {
		return fmt.Errorf("install containerd: %w", err)
	}
	if linked {
		fmt.Fprintf(out, "created symlink %s -> %s (the name selects gVisor)\n", runsc, filepath.Base(exe))
	}
	report(out, res, t.DryRun)
	if len(res.Changes) == 0 {
		fmt.Fprintf(out, "%s already registers bulkhead; nothing to do\n", res.Path)
	}
	shim := filepath.Join(filepath.Dir(exe), shimName)
	if _, err := os.Stat(shim); err != nil {
		fmt.Fprintf(out, "\nwarning: %s is not next to %s: install it there (make install does), or handler %s fails with \"runtime not found\"\n", shimName, exe, t.Name)
	} else if p, err := exec.LookPath(shimName); err != nil || p != shim {
		fmt.Fprintf(out, "\nnote: containerd looks %s up on its own PATH; make sure %s is on it (e.g. /usr/local/bin)\n", shimName, filepath.Dir(shim))
	}
	fmt.Fprintf(out, "\napply: containerd reads config.toml only at start:\n  systemctl restart containerd    # running containers keep running: their shims outlive the restart\n")
	fmt.Fprintf(out, "use:   Kubernetes: a RuntimeClass with handler: %s (deploy/kubernetes/runtimeclass.yaml)\n", t.Name)
	fmt.Fprintf(out, "       crictl runp --runtime %s POD.json;  ctr run --runtime %s IMAGE ID\n", t.Name, install.ShimRuntimeType)
	if runsc != "" {
		fmt.Fprintf(out, "       ctr run --runtime io.containerd.bulkhead-runsc.v2 IMAGE ID    # gVisor; no CRI handler: a gVisor pod's containers need gVisor's own shim\n")
	}
	fmt.Fprintf(out, "undo:  bulkhead uninstall containerd --config %s --name %s\n", res.Path, t.Name)
	return nil
}

func uninstallContainerd(c *cli.Context, out io.Writer) error {
	t, _, err := containerdTarget(c)
	if err != nil {
		return err
	}
	res, err := t.Uninstall()
	if err != nil {
		return fmt.Errorf("uninstall containerd: %w", err)
	}
	report(out, res, t.DryRun)
	if len(res.Changes) == 0 {
		fmt.Fprintf(out, "%s has no bulkhead handler named %s; nothing to do\n", res.Path, t.Name)
		return nil
	}
	fmt.Fprintf(out, "\napply: systemctl restart containerd\n")
	fmt.Fprintf(out, "       pods already running under %s keep running until they are removed; new ones with its RuntimeClass fail\n", t.Name)
	return nil
}
