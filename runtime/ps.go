package runtime

import (
	"io"
	"strings"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/workspace"
)

// Ps is the ps verb. Its table's command column is what the container
// named its processes: runc's comes through procps, which shows what a
// terminal would act on as '?', but runsc prints the sandbox's task names
// as they are, so an escape sequence in a name would reach the operator's
// terminal and a line break would add a row. bulkhead reads the table and
// writes it escaped, on every backend. The json format is handed over as
// it is: JSON escapes control characters itself, and callers parse it.
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
	if status, serr := backend.ExitStatus(err); serr != nil || status != 0 {
		if serr == nil {
			serr = &ExitError{Status: status}
		}
		return serr
	}
	table := workspace.EscapeLines(string(out))
	if b.IsGVisor() {
		table = gVisorTable(string(out))
	}
	_, err = io.WriteString(stdout, table)
	return err
}

// gVisorTable escapes runsc's table row by row, a line break inside a
// name included. runsc lays out seven fields of ten columns before CMD,
// and a name (the task's, at most 15 bytes) cannot make a line that
// long: a shorter line after the heading is the rest of the row above.
func gVisorTable(out string) string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	cmd := strings.Index(lines[0], "CMD")
	var rows []string
	for i, l := range lines {
		if i > 1 && (cmd < 0 || len(l) < cmd) {
			rows[len(rows)-1] += "\n" + l
			continue
		}
		rows = append(rows, l)
	}
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(workspace.EscapeText(r))
		b.WriteByte('\n')
	}
	return b.String()
}
