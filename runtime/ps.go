package runtime

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/escape"
)

// Ps is the ps verb. Its table's command column is what the container
// named its processes: runc's comes through procps, which shows what a
// terminal would act on as '?', but runsc prints the sandbox's task names
// as they are, so an escape sequence in a name would reach the operator's
// terminal and a line break would add a row. bulkhead writes the table
// escaped, on every backend, and on runsc only with a row per process.
// The json format is handed over as it is: JSON escapes control characters
// itself, and callers parse it.
func Ps(g *Globals, v Values, args []string, stdout io.Writer) error {
	b, _, err := ownerOfArgs(g, args)
	if err != nil {
		return err
	}
	if v.String("format") == "json" {
		return passthroughTo(g, b, "ps", v, args)
	}
	flags, _ := ForwardFlags("ps", v, b.IsGVisor())
	argv := g.backendArgv(b, "ps", append(flags, positional(args)...)...)
	var out []byte
	if b.IsGVisor() && len(args) > 0 {
		out, err = gVisorTable(argv, g.backendArgv(b, "ps", "--format", "json", args[0]), args[0])
	} else {
		out, err = backend.Output(argv)
	}
	if status, serr := backend.ExitStatus(err); serr != nil || status != 0 {
		if serr == nil {
			serr = &ExitError{Status: status}
		}
		return serr
	}
	_, err = io.WriteString(stdout, escape.Lines(string(out)))
	return err
}

// gVisorTable is runsc's table of a container, refused unless it has a
// row per process (and a heading). runsc lays its table out with a tab
// writer, so a line that a line break in a task's name begins is padded
// like any row: only the count tells it apart. The processes are listed
// before and after the table, and the table is read again while they
// changed.
func gVisorTable(table, pids []string, id string) ([]byte, error) {
	for range 3 {
		before, err := backend.Processes(pids)
		if err != nil {
			return nil, err
		}
		out, err := backend.Output(table)
		if err != nil {
			return out, err
		}
		after, err := backend.Processes(pids)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(before, after) {
			continue
		}
		if rows := strings.Count(strings.TrimSuffix(string(out), "\n"), "\n"); rows != len(before) {
			return nil, fmt.Errorf("ps %s: runsc's table has %d rows for %d processes: a process name the container chose holds a line break; `ps --format json` lists their pids", escape.Text(id), rows, len(before))
		}
		return out, nil
	}
	return nil, fmt.Errorf("ps %s: the container's processes changed while they were listed, three times; try again, or `ps --format json`", escape.Text(id))
}
