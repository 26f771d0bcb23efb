package runtime

import (
	"io"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/workspace"
)

// Ps is the ps verb. Its table's command column is what the container
// named its processes: runc's comes through procps, which escapes what a
// terminal would act on, but runsc prints the sandbox's task names as they
// are, so an escape sequence in a name would reach the operator's
// terminal. bulkhead reads the table and writes it escaped, on every
// backend. The json format is handed over as it is: JSON escapes control
// characters itself, and callers parse it.
func Ps(g *Globals, v Values, args []string, stdout io.Writer) error {
	b, err := ownerOfArgs(g, args)
	if err != nil {
		return err
	}
	if v.String("format") == "json" {
		return passthroughTo(g, b, "ps", v, args)
	}
	flags, _ := ForwardFlags("ps", v, b.IsGVisor())
	out, err := backend.Output(g.backendArgv(b, "ps", append(flags, positional(args)...)...))
	if _, werr := io.WriteString(stdout, workspace.EscapeTerminal(string(out))); werr != nil && err == nil {
		err = werr
	}
	status, err := backend.ExitStatus(err)
	if err == nil && status != 0 {
		err = &ExitError{Status: status}
	}
	return err
}
