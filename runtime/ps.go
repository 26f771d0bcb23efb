package runtime

import (
	"fmt"
	"io"
	"strconv"
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
		out, err = gVisorTable(argv, args[0])
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

// gVisorTable is runsc's table of a container, refused unless each line
// after the heading is a row. runsc lays the table out with a tab writer
// (control.ProcessListToTable), so a line break in a task's name starts a
// line of its own, its tabs made into padded cells. A row has every
// column where the heading has it, its PID and PPID numbers; a name holds
// at most 15 bytes in gVisor's kernel, as in Linux, so what follows a line
// break in one has at most 7 cells and is never taken for a row. One
// reading, judged line by line, whatever processes come and go meanwhile.
func gVisorTable(table []string, id string) ([]byte, error) {
	out, err := backend.Output(table)
	if err != nil {
		return out, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	cols := psColumns(lines[0])
	for _, l := range lines[1:] {
		if !psRow(l, cols) {
			return nil, fmt.Errorf("ps %s: runsc's table holds a line that is no row: a process name the container chose holds a line break; `ps --format json` lists their pids", escape.Text(id))
		}
	}
	return out, nil
}

// psHeading is runsc's heading, one word per column.
var psHeading = []string{"UID", "PID", "PPID", "C", "TTY", "STIME", "TIME", "CMD"}

// psColumns are the offsets where the heading's columns begin, nil when
// the heading is not runsc's.
func psColumns(heading string) []int {
	var cols []int
	for i := 0; i < len(heading); {
		for i < len(heading) && heading[i] == ' ' {
			i++
		}
		if i == len(heading) {
			break
		}
		cols = append(cols, i)
		for i < len(heading) && heading[i] != ' ' {
			i++
		}
	}
	if len(cols) != len(psHeading) || strings.Join(strings.Fields(heading), " ") != strings.Join(psHeading, " ") {
		return nil
	}
	return cols
}

// psRow tells whether l is a row of the table whose columns begin at
// cols: one word in each column before CMD, ending before the next, PID
// and PPID numbers, and a name. Eight cells take 15 bytes at the least,
// one more than a 15-byte name holds after its line break; seven
// tab-ended cells and no name fit, so a row without a name is none (a
// task that names itself "" gets its ps refused).
func psRow(l string, cols []int) bool {
	if cols == nil || len(l) <= cols[len(cols)-1] || strings.TrimSpace(l[cols[len(cols)-1]:]) == "" {
		return false
	}
	for i := 0; i+1 < len(cols); i++ {
		cell := l[cols[i]:cols[i+1]]
		word := strings.TrimRight(cell, " ")
		if word == "" || strings.Contains(word, " ") || len(word) == len(cell) {
			return false
		}
		if i == 1 || i == 2 {
			if _, err := strconv.Atoi(word); err != nil {
				return false
			}
		}
	}
	return true
}
