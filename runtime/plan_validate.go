package runtime

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/opencontainers/runc/libcontainer/configs/validate"
	"github.com/opencontainers/runc/libcontainer/specconv"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// validateForBackend converts the spec the way runc will and runs runc's
// own validator, so a spec the backend would reject fails here with a
// message naming the field instead of an opaque backend error.
func validateForBackend(id, bundle string, s *rspec.Spec, g *Globals) error {
	if s.Root == nil {
		return fmt.Errorf("spec has no root")
	}
	if err := validateProcess(s.Process); err != nil {
		return fmt.Errorf("spec fails the backend's validation: %w", err)
	}
	// runc resolves root.path against the bundle, specconv against the
	// working directory: hand it an absolute path.
	c := *s
	root := *s.Root
	if !filepath.IsAbs(root.Path) {
		root.Path = filepath.Join(bundle, root.Path)
	}
	c.Root = &root
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:       id,
		UseSystemdCgroup: g.SystemdCgroup,
		Spec:             &c,
	})
	if err != nil {
		return fmt.Errorf("spec does not convert for the backend: %w", err)
	}
	if err := validate.Validate(cfg); err != nil {
		return fmt.Errorf("spec fails the backend's validation: %w", err)
	}
	return nil
}

// validateProcess is what runc's create asks of the process besides
// libcontainer's validation (runc's validateProcessSpec, in its main
// package), so that check says what create would; runsc asks the same.
// An SELinux label is the labels rule's.
func validateProcess(p *rspec.Process) error {
	switch {
	case p == nil:
		return errors.New("process: none; give the container a process")
	case p.Cwd == "":
		return errors.New("process.cwd: empty; give an absolute path")
	case !filepath.IsAbs(p.Cwd):
		return fmt.Errorf("process.cwd: %q is not an absolute path", p.Cwd)
	case len(p.Args) == 0:
		return errors.New("process.args: empty; give the command to run")
	}
	return nil
}
